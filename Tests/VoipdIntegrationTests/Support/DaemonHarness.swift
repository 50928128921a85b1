import Foundation
import Glibc
import Testing
import VoipClient
import VoipdProtocol
import VoipdSystem
import VoipdTestSupport

/// A real voipd in a private directory, ready when its READY=1 arrives on the notify socket,
/// with a follower of its event stream and a report socket for test apps. ``stop()`` ends
/// every process it started, by pid, and removes the directory.
final class DaemonHarness {
    let directory: String
    let socketPath: String
    let logPath: String
    let daemon: TestProcess
    let control: VoipdControl
    private let follower: VoipdControl
    private var transitions: [TransitionRecord] = []
    let reports: ReportServer
    /// The stand-in for the service manager's notify socket, open as long as the daemon runs.
    private let notify: FileDescriptor
    private var apps: [TestAppHandle] = []
    private var peers: [TCPPeer] = []

    /// `adjust` changes how voipd itself is started (descriptors it inherits, its groups,
    /// limits or umask). `socketName`: the control socket's name in the harness's directory;
    /// `prepare` is given its path before voipd starts (to plant what an earlier voipd left).
    /// `binary`: the voipd program to run (a copy, say, that a test removes).
    init(binary: String = Binaries.voipd, timeScale: Double = 1, arguments: [String] = [], environment: [String] = [], socketName: String = "voipd.sock",
         adjust: (inout SpawnRequest) -> Void = { _ in }, prepare: (_ socketPath: String) throws -> Void = { _ in }) throws {
        directory = try makeTemporaryDirectory("voipd-test")
        socketPath = directory + "/" + socketName
        try prepare(socketPath)
        logPath = directory + "/voipd.log"
        notify = try Socket.make(domain: AF_UNIX, type: Socket.datagramType, nonBlocking: true)
        try bindDatagram(notify, path: directory + "/notify.sock")
        let log = try openFile(logPath, flags: O_WRONLY | O_CREAT | O_APPEND)
        daemon = try TestProcess(
            [binary, "--socket", socketPath, "--log-level", "debug", "--time-scale", "\(timeScale)", "--no-memory-pressure-trigger"]
                // Not the machine's configuration; a test's own file (--config in `arguments`)
                // cannot set appsDirectory, the flag here wins: pass --apps-directory instead.
                + Binaries.ownConfiguration(in: directory) + arguments,
            environment: currentEnvironment().filter { !$0.hasPrefix("VOIPD_") && !$0.hasPrefix("NOTIFY_SOCKET=") }
                + ["NOTIFY_SOCKET=\(directory)/notify.sock"] + environment,
            output: log.rawValue, adjust: adjust)
        let deadline = Deadline(.seconds(20))
        var ready = false
        while !ready {
            guard waitReadable(notify.rawValue, deadline) else {
                daemon.stop()
                throw TimedOut(description: "voipd did not report READY=1; log:\n\(ProcFS.read(logPath) ?? "")")
            }
            let message = try notify.read(upTo: 4096)
            ready = String(decoding: message, as: UTF8.self).split(separator: "\n").contains("READY=1")
        }
        control = try VoipdControl(socketPath: socketPath)
        follower = try VoipdControl(socketPath: socketPath)
        transitions = try follower.events(follow: true)
        reports = try ReportServer(path: directory + "/report.sock")
    }

    /// Reads every notification voipd sent since READY=1 and closes the descriptors that
    /// came with them (FDSTORE=1): a descriptor left in flight keeps its socket open.
    func drainNotifications() {
        while case .processed(let message)? = try? Socket.receive(notify, maxBytes: 4096, maxDescriptors: 16), !message.isEndOfStream {
            message.descriptors.closeAll()
        }
    }

    /// The daemon's log so far (for failure messages).
    var log: String { ProcFS.read(logPath) ?? "" }

    /// Runs `body`; an error it throws comes out with the end of voipd's log (80 lines), to
    /// show what voipd did then.
    func showingLogOnError<Result>(_ body: () throws -> Result) throws -> Result {
        do {
            return try body()
        } catch {
            throw FailedWithLog(error: error, log: log.split(separator: "\n").suffix(80).joined(separator: "\n"))
        }
    }

    /// A TCP peer on loopback that lives (with every connection it accepts) until ``stop()``.
    func makePeer() throws -> TCPPeer {
        let peer = try TCPPeer()
        peers.append(peer)
        return peer
    }

    /// Launches the test app under supervision and waits for its hello.
    func launchTestApp(_ name: String, _ arguments: [String] = [], background: Bool = false, relaunchOnData: Bool = true,
                       exitsOnSuspend: Bool = false) throws -> TestAppHandle {
        _ = try control.launch([Binaries.testApp, "--report", reports.path] + arguments, name: name, background: background,
                               exitsOnSuspend: exitsOnSuspend, relaunchOnData: relaunchOnData)
        return try acceptApp(name)
    }

    /// Launches the test app and registers a TCP connection to `peer` (a new one by default)
    /// as its VoIP socket "sip"; the app and the peer's end of that connection.
    func launchAppWithVoIPSocket(_ name: String, _ arguments: [String] = [], relaunchOnData: Bool = true,
                                 peer: TCPPeer? = nil) throws -> (app: TestAppHandle, remote: PeerConnection) {
        let peer = try peer ?? makePeer()
        let app = try launchTestApp(name, arguments, relaunchOnData: relaunchOnData)
        let remote = try app.registerVoIPSocket("sip", connectedTo: peer)
        return (app, remote)
    }

    /// Waits for a test app (launched or relaunched) to connect its report channel and say hello.
    func acceptApp(_ name: String, timeout: Duration = .seconds(20)) throws -> TestAppHandle {
        let app = try reports.accept(name: name, timeout: timeout)
        apps.append(app)
        _ = try app.expect(\.hello, timeout: timeout)
        return app
    }

    /// Waits for `app` to reach `state` (a transition reported by the event stream), newer
    /// than the transitions already seen.
    @discardableResult
    func waitForState(_ app: String, _ state: AppState, timeout: Duration = .seconds(20)) throws -> TransitionRecord {
        // Consumes the match and this app's transitions before it; other apps' stay.
        func take(_ index: Int) -> TransitionRecord {
            let record = transitions[index]
            transitions = transitions.enumerated().filter { $0.offset > index || $0.element.app != app }.map(\.element)
            return record
        }
        if let index = transitions.firstIndex(where: { $0.app == app && $0.to == state }) { return take(index) }
        let deadline = Deadline(timeout)
        while !deadline.hasPassed {
            guard let record = try follower.nextTransition(timeoutMilliseconds: deadline.remainingMilliseconds) else { break }
            transitions.append(record)
            if record.app == app && record.to == state { return take(transitions.count - 1) }
        }
        throw TimedOut(description: "\(app) did not reach \(state.rawValue); status: \((try? control.status(app)) ?? []); log tail:\n\(log.split(separator: "\n").suffix(30).joined(separator: "\n"))")
    }

    /// Sends `app` to the background and waits until voipd has suspended it.
    @discardableResult
    func suspend(_ app: String, timeout: Duration = .seconds(20)) throws -> TransitionRecord {
        _ = try control.command(.background, app)
        return try waitForState(app, .suspended, timeout: timeout)
    }

    /// Sends the test app to the background, sees it told so (willResignActive, then
    /// didEnterBackground), and waits until voipd has suspended it.
    @discardableResult
    func suspend(_ app: TestAppHandle) throws -> TransitionRecord {
        try control.command(.background, app.name)
        try app.expectEvent(.willResignActive)
        try app.expectEvent(.didEnterBackground)
        return try waitForState(app.name, .suspended)
    }

    /// The next transition of any app, in the order the daemon made them (those seen but not
    /// taken by ``waitForState(_:_:timeout:)`` first).
    func nextTransition(timeout: Duration = .seconds(20)) throws -> TransitionRecord {
        if !transitions.isEmpty { return transitions.removeFirst() }
        let deadline = Deadline(timeout)
        guard let record = try follower.nextTransition(timeoutMilliseconds: deadline.remainingMilliseconds) else {
            throw TimedOut(description: "no transition came; log tail:\n\(log.split(separator: "\n").suffix(30).joined(separator: "\n"))")
        }
        return record
    }

    /// Forgets the transitions seen so far, so the next wait looks only at new ones.
    func discardTransitions() {
        transitions.removeAll()
        while let record = try? follower.nextTransition(timeoutMilliseconds: 0) { _ = record }
    }

    func status(_ app: String) throws -> AppStatus { try control.app(app) }

    /// Stops every app process still alive (by pid), then the daemon, then removes the
    /// directory and what voipd left in the v1 freezer hierarchy (an app frozen there dies
    /// of the SIGKILL only once voipd's shutdown thaws it, after voipd tried to remove its
    /// cgroup: HibernationEndTests left `voipd/INSTANCE/app-wide` behind, empty).
    func stop() {
        for app in (try? control.status()) ?? [] {
            // A raw protocol client in this process may have identified as an app.
            if let pid = app.pid, pid != getpid() {
                kill(pid, SIGCONT)
                kill(pid, SIGKILL)
            }
        }
        for app in apps { app.stopProcesses() }
        drainNotifications()
        try? daemon.pidfd.send(SIGTERM)
        if (try? daemon.waitForExit(.seconds(10))) == nil { daemon.stop() }
        removeLegacyFreezerDirectory(socketPath: socketPath)
        // VOIPD_TEST_KEEP=1 keeps the directory (and the daemon's log) for a post-mortem.
        if getenv("VOIPD_TEST_KEEP") == nil { removeTree(directory) }
    }
}

/// An error, with voipd's log at the time.
struct FailedWithLog: Error, CustomStringConvertible {
    var error: any Error
    var log: String

    var description: String { "\(error); voipd's log:\n\(log)" }
}

/// Binds a datagram socket to a path (a notify socket).
func bindDatagram(_ fd: borrowing FileDescriptor, path: String) throws {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
    _ = try withUnsafePointer(to: &address) { pointer in
        try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
            try valueOrErrno("bind(\(path))") { bind(fd.rawValue, sa, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
