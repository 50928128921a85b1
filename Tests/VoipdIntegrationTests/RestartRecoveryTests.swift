import Foundation
import Glibc
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// voipd killed without a service manager to keep anything (issue 8, item 4): the state
/// file lets the next voipd resume the apps it left stopped, and the client library
/// reconnects them by itself, sockets and all. And a state file voipd did not write, or
/// that names processes that are not the apps', makes it signal nothing.
@Suite("Restart recovery", .serialized)
final class RestartRecoveryTests {
    /// Each test's own rig (Swift Testing makes a new suite instance for every test): a test
    /// here uses it rather than making another.
    let rig: ServiceRig

    init() throws { rig = try ServiceRig() }

    deinit { rig.stop() }

    static let arguments = ["--time-scale", "0.1"]

    /// A voipd of the rig's, started by hand (only what `passing` names is passed), once ready.
    static func start(_ rig: ServiceRig, passing descriptors: [(name: String, descriptor: CInt)] = [],
                      arguments extra: [String] = []) throws -> TestProcess {
        let voipd = try rig.start(passing: descriptors, arguments: arguments + extra)
        try rig.manager.expect("READY=1", context: rig.log)
        return voipd
    }

    /// A connection for commands, and one following the event stream.
    static func controls(_ rig: ServiceRig) throws -> (control: VoipdControl, follower: VoipdControl) {
        let follower = try VoipdControl(socketPath: rig.socketPath)
        _ = try follower.events(follow: true)
        return (try VoipdControl(socketPath: rig.socketPath), follower)
    }

    /// Sends `app` to the background and waits until it is suspended.
    static func suspend(_ app: String, _ control: VoipdControl, _ follower: VoipdControl) throws {
        try control.command(.background, app)
        try control.waitUntil(app, is: .suspended, follower: follower)
    }

    /// A suspended app taken back by a restarted voipd, sent no data: only its keep-alive can
    /// wake it. It finds voipd gone, connects again as the same process, gets the keep-alive,
    /// runs its handler and is suspended again, never launched by the new voipd.
    static func expectWokenByKeepAliveOnly(_ app: TestAppHandle, _ name: String, _ control: VoipdControl,
                                           _ follower: VoipdControl) throws {
        try app.expect(.disconnected)
        #expect(try app.expect(\.reconnection).pid == app.pid, "the same process, not a relaunch")
        try app.expectEvent(.keepAlive)
        try app.expect(.keepAliveHandler)
        try control.waitUntil(name, is: .suspended, follower: follower)
        #expect(try control.app(name).launches == 0, "taken back, never launched by this voipd")
    }

    /// voipd killed (no chance to resume anything), and gone.
    static func crash(_ voipd: TestProcess) throws {
        try voipd.pidfd.send(SIGKILL)
        _ = try voipd.waitForExit(.seconds(10))
    }

    /// A launched test app with VoIP sockets registered to `peer`, and their far ends.
    static func launch(_ rig: ServiceRig, _ control: VoipdControl, _ name: String, sockets: [String], peer: TCPPeer,
                       extra: [String] = []) throws -> (TestAppHandle, [String: PeerConnection]) {
        _ = try control.launch([Binaries.testApp, "--report", rig.reports.path] + extra, name: name)
        let app = try rig.acceptApp(name)
        var remotes: [String: PeerConnection] = [:]
        for socket in sockets {
            remotes[socket] = try app.registerVoIPSocket(socket, connectedTo: peer)
        }
        return (app, remotes)
    }

    @Test("SIGKILL voipd with suspended apps whose VoIP sockets have unread data: a new voipd on the same path copies each one's sockets back from it and, since data waits for each, resumes each (never a second copy launched for the data), each reconnects and finds its sockets held, every byte is read, and the new voipd wakes them as the old one did")
    func crashWithSuspendedApps() throws {
        let peer = try TCPPeer()
        let first = try Self.start(rig)
        let (control, follower) = try Self.controls(rig)

        // Three apps suspended (one with two VoIP sockets), one in the foreground.
        let layout = ["alpha": ["sip", "xmpp"], "bravo": ["sip"], "charlie": ["sip"], "delta": ["sip"]]
        var apps: [String: TestAppHandle] = [:]
        var remotes: [String: [String: PeerConnection]] = [:]
        for (name, sockets) in layout.sorted(by: { $0.key < $1.key }) {
            (apps[name], remotes[name]) = try Self.launch(rig, control, name, sockets: sockets, peer: peer)
        }
        let suspended = ["alpha", "bravo", "charlie"]
        for name in suspended {
            try Self.suspend(name, control, follower)
        }
        var pids: [String: pid_t] = [:]
        for (name, app) in apps { pids[name] = app.pid }

        // The state file, beside the socket: voipd's alone.
        let statePath = rig.directory + "/voipd.state"
        var info = stat()
        #expect(stat(statePath, &info) == 0, "no state file at \(statePath)")
        #expect(info.st_mode & 0o777 == 0o600 && info.st_uid == geteuid())
        let written = try PlantedStateFile.read(statePath)
        #expect((written["apps"] as? [[String: Any]])?.compactMap { $0["name"] as? String }.sorted() == layout.keys.sorted())

        // voipd dies: nothing resumes the apps, and data arrives for each meanwhile.
        try Self.crash(first)
        for name in suspended { #expect(processState(pids[name]!) == "T", "\(name) left stopped by the crash") }
        for (name, sockets) in remotes {
            for (socket, remote) in sockets { try remote.write("INVITE \(name)/\(socket)") }
        }

        // A new voipd by hand on the same path: it copies each one's sockets back from it,
        // and resumes each for the data waiting on them; each reconnects.
        let second = try Self.start(rig)
        for name in suspended {
            #expect(rig.log.contains("\(name): holding VoIP sockets \(layout[name]!.joined(separator: ", ")) again, copied from its processes"), "\(rig.log)")
            #expect(rig.log.contains("\(name): pid \(pids[name]!) still running from before voipd started; it was stopped: resumed"), "\(rig.log)")
        }
        #expect(rig.log.components(separatedBy: ": started pid ").count == 1 + layout.count, "launched once each, by the first voipd\n\(rig.log)")
        for (name, app) in apps.sorted(by: { $0.key < $1.key }) {
            try app.expect(.disconnected)
            let back = try app.expect(\.reconnection)
            #expect(back.registered == layout[name], "\(name) registered again \(back)")
            #expect(back.pid == pids[name]!, "the same process, not a relaunch")
            for socket in layout[name]! {
                #expect(try app.expectRead(socket) == .data("INVITE \(name)/\(socket)"))
            }
        }
        let (control2, follower2) = try Self.controls(rig)
        for (name, sockets) in layout {
            let status = try control2.app(name)
            // Known for what it was: owner, how it was launched, the same process.
            #expect(status.pid == pids[name])
            #expect(status.uid == getuid())
            #expect(status.launchedByVoipd)
            #expect(try control2.sockets(name).map(\.name).sorted() == sockets)
        }
        // The foreground app stays in the foreground.
        #expect(try control2.app("delta").state == .active)

        // Back in the background (the wake budget of the adoption spent), suspended by the
        // new voipd, which now wakes them on data as the old one did.
        for name in suspended { try control2.waitUntil(name, is: .suspended, follower: follower2) }
        for name in suspended {
            #expect(processState(pids[name]!) == "T")
            try remotes[name]!["sip"]!.write("BYE \(name)")
            let wake = try apps[name]!.expectEvent(.voipSocketReadable)
            #expect(wake.socket?.name == "sip")
            #expect(try apps[name]!.expectRead("sip") == .data("BYE \(name)"))
        }
        #expect(try rig.terminate(second) == .exited(0))
    }

    @Test("a socket registered while voipd is away is registered when it is back")
    func registeredWhileAway() throws {
        let peer = try TCPPeer()
        let first = try Self.start(rig)
        let control = try VoipdControl(socketPath: rig.socketPath)
        let (app, _) = try Self.launch(rig, control, "phone", sockets: ["sip"], peer: peer)
        try Self.crash(first)
        try app.expect(.disconnected)

        // The app, running on its own, opens another connection and registers it.
        let remote = try app.registerVoIPSocket("late", connectedTo: peer)

        let second = try Self.start(rig)
        let back = try app.expect(\.reconnection)
        #expect(back.registered == ["late", "sip"])
        let (control2, follower) = try Self.controls(rig)
        #expect(try control2.sockets("phone").map(\.name).sorted() == ["late", "sip"])
        // Held by the new voipd: it wakes the app for it once suspended.
        try Self.suspend("phone", control2, follower)
        try remote.write("hello late")
        let wake = try app.expectEvent(.voipSocketReadable)
        #expect(wake.socket?.name == "late")
        _ = try rig.terminate(second)
    }

    @Test("under a service manager's store, a reconnecting app finds its own socket held again and does not register it twice")
    func storeAndReconnection() throws {
        let peer = try TCPPeer()
        let listener = try Socket.listenUnix(path: rig.socketPath)
        let first = try Self.start(rig, passing: [("control", listener.rawValue)])
        let (control, follower) = try Self.controls(rig)
        let (app, remotes) = try Self.launch(rig, control, "phone", sockets: ["sip"], peer: peer)
        try Self.suspend("phone", control, follower)
        try rig.manager.expect("FDSTORE=1 of phone/sip", context: rig.log) { $0.has("FDSTORE=1") && $0["FDNAME"] == "phone/sip" }
        try Self.crash(first)
        try remotes["sip"]!.write("INVITE")

        let second = try Self.start(rig, passing: [("control", listener.rawValue)] + rig.manager.store.map { ($0.name, $0.descriptor.rawValue) })
        let back = try app.expect(\.reconnection)
        #expect(back.registered == ["sip"])
        #expect(back.restored == [], "its own socket, not one of an earlier run")
        #expect(try app.expectRead("sip") == .data("INVITE"))
        #expect(!app.history.contains { if case .registrationRefused = $0 { true } else { false } })
        let held = try VoipdControl(socketPath: rig.socketPath).sockets("phone")
        #expect(held.map(\.name) == ["sip"])
        // Registered once, with the first voipd; the second took it from the store.
        #expect(rig.log.components(separatedBy: "phone: holding VoIP socket sip (tcp)\n").count == 2, "\(rig.log)")
        #expect(rig.log.contains("phone: holding VoIP socket sip (tcp) again, from the service manager's store"))
        _ = try rig.terminate(second)
    }

    @Test("an entry a voipd cannot read (a suspension kind of a newer voipd) is left out; the rest of the file still counts",
          .enabled(if: getuid() == 0, "needs root"))
    func unknownEntryIsSkipped() throws {
        let frozen = try StoppedDecoy()
        defer { frozen.process.stop() }
        let stopped = try StoppedDecoy()
        defer { stopped.process.stop() }
        var newer = PlantedStateFile.app("frozen", pid: frozen.pid, startTime: frozen.startTime, uid: 0)
        var process = newer["process"] as! [String: Any]
        process["suspension"] = ["cgroupFreezer": ["path": "/sys/fs/cgroup/voipd/frozen"]]
        newer["process"] = process
        let (voipd, directory) = try PlantedStateFile.startVoipd(rig, with: [newer, PlantedStateFile.app("stopped", pid: stopped.pid, startTime: stopped.startTime, uid: 0)])
        #expect(rig.log.contains("1 apps in the state file \(directory)/voipd.state could not be read; left out"), "\(rig.log)")
        #expect(frozen.isStopped)
        #expect(!stopped.isStopped)
        _ = try rig.terminate(voipd)
    }

    @Test("a launched app's process group, stopped with it, is continued with it after a crash: from the state file alone, with the fd store, and with the fd store and no state file",
          arguments: [(store: false, stateFile: true), (store: true, stateFile: true), (store: true, stateFile: false)])
    func processGroupContinued(withStore: Bool, withStateFile: Bool) throws {
        let listener = try Socket.listenUnix(path: rig.socketPath)
        let control = [("control", listener.rawValue)]
        let noStateFile = withStateFile ? [] : ["--state-directory", ""]
        let first = try Self.start(rig, passing: control, arguments: noStateFile)
        let (commands, follower) = try Self.controls(rig)
        // A shell and its helper, in the session voipd made for the shell; it says the
        // helper's pid on its output.
        let output = try makePipe()
        let status = try commands.launch(["/bin/sh", "-c", "/bin/sleep 600 & echo $!; wait"], name: "group", speaksProtocol: false,
                                         output: output.second.rawValue)
        let leader = try #require(status.pid)
        #expect(waitReadable(output.first.rawValue, Deadline(.seconds(10))))
        let helper = try #require(pid_t(String(decoding: try output.first.read(upTo: 64), as: UTF8.self).split(separator: "\n").first ?? ""))
        defer { kill(helper, SIGCONT); kill(helper, SIGKILL) }
        try Self.suspend("group", commands, follower)
        #expect(waitUntilStopped(helper, Deadline(.seconds(10))), "the helper is stopped with its leader")
        if withStore {
            try rig.manager.expect("FDSTORE=1 of group/#process", context: rig.log) { $0.has("FDSTORE=1") && $0["FDNAME"] == "group/#process" }
        }
        try Self.crash(first)

        let stored = withStore ? rig.manager.store.map { ($0.name, $0.descriptor.rawValue) } : []
        let second = try Self.start(rig, passing: control + stored, arguments: noStateFile)
        #expect(rig.log.contains("group: pid \(leader) still running from before voipd started; it was stopped: resumed"), "\(rig.log)")
        #expect(processState(leader) != "T")
        #expect(processState(helper) != "T", "the helper was left stopped")
        _ = try rig.terminate(second)
    }

    @Test("a stopped survivor the next voipd cannot watch for its end (epoll_ctl of its pidfd fails, ENOSPC: the user's epoll watches are spent) is not left stopped: continued, and said to run on unsupervised; voipd serves on",
          .enabled(if: SyscallFaults.available, "needs strace"))
    func survivorThatCannotBeWatched() throws {
        let first = try Self.start(rig)
        let (commands, follower) = try Self.controls(rig)
        let marker = "86400.\(UInt32.random(in: 1...UInt32.max))"
        let status = try commands.launch(["/bin/sleep", marker], name: "sleeper", speaksProtocol: false)
        let survivor = try #require(status.pid)
        defer { kill(survivor, SIGCONT); kill(survivor, SIGKILL) }
        try Self.suspend("sleeper", commands, follower)
        try Self.crash(first)
        #expect(processState(survivor) == "T")

        // The next voipd under strace, its fifth epoll_ctl failing: the registrations of its
        // loop (the others' set, the control socket, signals, the timer), then the survivor's pidfd.
        let trace = rig.directory + "/strace.log"
        let output = try openFile(rig.directory + "/second.log", flags: O_WRONLY | O_CREAT | O_TRUNC)
        // LeakSanitizer cannot run under ptrace: a voipd built with ASan, traced for its whole
        // life, would end with its fatal error instead of its own status.
        let leakChecksOff = ProcessInfo.processInfo.environment["ASAN_OPTIONS"].map { ["/usr/bin/env", "ASAN_OPTIONS=\($0):detect_leaks=0"] } ?? []
        let tracer = try rig.manager.start(leakChecksOff + [SyscallFaults.strace, "-o", trace, "-e", "trace=epoll_ctl", "-e", "inject=epoll_ctl:error=ENOSPC:when=5"]
                                           + rig.voipd(Self.arguments), passing: [], output: output.rawValue)
        defer { tracer.stop() }
        try rig.manager.expect("READY=1", context: ProcFS.read(rig.directory + "/second.log") ?? "")
        let log = ProcFS.read(rig.directory + "/second.log") ?? ""
        #expect(log.contains("sleeper: cannot watch pid \(survivor) again: "), "\(log)")
        #expect(log.contains("it was stopped: resumed, and runs on unsupervised"), "\(log)")
        #expect(processState(survivor) != "T", "pid \(survivor) was left stopped")
        #expect((ProcFS.read(trace) ?? "").contains("ENOSPC (No space left on device) (INJECTED)"))
        // voipd serves on.
        #expect(try VoipdControl(socketPath: rig.socketPath).status().allSatisfy { $0.pid != survivor })
        // voipd ended by SIGTERM, then strace with it.
        let voipd = try #require(childProcesses(of: tracer.pid).first)
        kill(voipd, SIGTERM)
        #expect(try tracer.waitForExit(.seconds(20)) == .exited(0))
    }

    @Test("a recorded pid that now names another process (its start time differs), or a start time that is not the process's, is left alone")
    func pidReuseIsNotSignalled() throws {
        let decoy = try StoppedDecoy()
        defer { decoy.process.stop() }
        let first = try Self.start(rig)
        let (control, follower) = try Self.controls(rig)
        _ = try control.launch([Binaries.testApp, "--report", rig.reports.path], name: "phone")
        let app = try rig.acceptApp("phone")
        try Self.suspend("phone", control, follower)
        try Self.crash(first)

        // As if the pid had been reused: the phone's entry with another start time, and an
        // entry naming the decoy's pid with a start time that is not the decoy's.
        let statePath = rig.directory + "/voipd.state"
        var state = try PlantedStateFile.read(statePath)
        var entries = try #require(state["apps"] as? [[String: Any]])
        var phone = try #require(entries.first { $0["name"] as? String == "phone" })
        var process = try #require(phone["process"] as? [String: Any])
        var identity = try #require(process["identity"] as? [String: Any])
        let realStart = try #require(identity["startTime"] as? Int)
        identity["startTime"] = realStart + 1
        process["identity"] = identity
        phone["process"] = process
        // The decoy's own start time and one: the phone's may be the decoy's too (both
        // started within the same clock tick, which a quiet machine makes common).
        entries = [phone, PlantedStateFile.app("decoy", pid: decoy.pid, startTime: decoy.startTime + 1, uid: 0)]
        state["apps"] = entries
        try PlantedStateFile.write(try JSONSerialization.data(withJSONObject: state), to: statePath)

        let second = try Self.start(rig)
        #expect(rig.log.contains("phone: pid \(app.pid) is another process now"), "\(rig.log)")
        #expect(rig.log.contains("decoy: pid \(decoy.pid) is another process now"), "\(rig.log)")
        #expect(processState(app.pid) == "T", "the phone's pid was not the phone's any more: not signalled")
        #expect(decoy.isStopped, "a process the state file misnamed was continued")
        #expect(try VoipdControl(socketPath: rig.socketPath).app("phone").pid == nil)
        _ = try rig.terminate(second)
    }

    /// A state file (or directory) an unprivileged user could have written, or content that
    /// does not hold, naming a stopped process of root's.
    enum Planting: String, CaseIterable, CustomTestStringConvertible {
        case garbage, fileOfAnotherUser, fileWritableByOthers, directoryOfAnotherUser, directoryWritableByOthers, uidNotTheProcesss
        var testDescription: String { rawValue }
    }

    @Test("a root voipd signals nothing a state file it cannot trust names, and keeps serving",
          .enabled(if: getuid() == 0, "needs root (chown)"), arguments: Planting.allCases)
    func untrustedStateFile(_ planting: Planting) throws {
        let decoy = try StoppedDecoy()
        defer { decoy.process.stop() }
        let directory = rig.directory + "/state"
        mkdir(directory, 0o700)
        let path = directory + "/voipd.state"
        let honest = try PlantedStateFile.document([PlantedStateFile.app("decoy", pid: decoy.pid, startTime: decoy.startTime, uid: 0)])
        switch planting {
        case .garbage:
            try PlantedStateFile.write(Data((0..<4096).map { _ in UInt8.random(in: 0...255) }), to: path)
        case .fileOfAnotherUser:
            try PlantedStateFile.write(honest, to: path, owner: 65534)
        case .fileWritableByOthers:
            try PlantedStateFile.write(honest, to: path, mode: 0o666)
        case .directoryOfAnotherUser:
            try PlantedStateFile.write(honest, to: path)
            _ = try valueOrErrno("chown") { chown(directory, 65534, 65534) }
        case .directoryWritableByOthers:
            try PlantedStateFile.write(honest, to: path)
            _ = try valueOrErrno("chmod") { chmod(directory, 0o777) }
        case .uidNotTheProcesss:
            try PlantedStateFile.write(try PlantedStateFile.document([
                PlantedStateFile.app("decoy", pid: decoy.pid, startTime: decoy.startTime, uid: 65534),
            ]), to: path)
        }
        let voipd = try Self.start(rig, arguments: ["--state-directory", directory])
        #expect(decoy.isStopped, "\(planting): the decoy was continued\n\(rig.log)")
        let expected = switch planting {
        case .garbage: "ignoring the state file \(path)"
        case .fileOfAnotherUser: "owned by uid 65534, not uid 0"
        case .fileWritableByOthers: "\(path): writable by others (mode 666)"
        case .directoryOfAnotherUser: "\(directory): owned by uid 65534, neither root nor uid 0"
        case .directoryWritableByOthers: "\(directory): writable by others (mode 777)"
        case .uidNotTheProcesss: "decoy: pid \(decoy.pid) runs as uid 0, not uid 65534 as recorded: left alone"
        }
        #expect(rig.log.contains(expected), "\(planting): \(rig.log)")
        // It serves all the same.
        _ = try VoipdControl(socketPath: rig.socketPath).status()
        #expect(try rig.terminate(voipd) == .exited(0))
    }

    @Test("the same file, trusted, does have the decoy continued: what stops it above is the checks",
          .enabled(if: getuid() == 0, "needs root"))
    func trustedStateFileResumes() throws {
        let decoy = try StoppedDecoy()
        defer { decoy.process.stop() }
        let (voipd, _) = try PlantedStateFile.startVoipd(rig, with: [PlantedStateFile.app("decoy", pid: decoy.pid, startTime: decoy.startTime, uid: 0)])
        #expect(rig.log.contains("decoy: pid \(decoy.pid) still running from before voipd started; it was stopped: resumed"), "\(rig.log)")
        #expect(!decoy.isStopped)
        _ = try rig.terminate(voipd)
    }

    @Test("an unprivileged voipd leaves alone a process of root's that its own state file names",
          .enabled(if: getuid() == 0 && toolAvailableOrCI("/usr/bin/setpriv"), "needs root and setpriv"))
    func unprivilegedVoipdLeavesRootsProcessAlone() throws {
        let decoy = try StoppedDecoy()
        defer { decoy.process.stop() }
        // A directory of uid 65534's, reachable by it.
        _ = try valueOrErrno("chmod") { chmod(rig.directory, 0o711) }
        let home = rig.directory + "/nobody"
        mkdir(home, 0o700)
        _ = try valueOrErrno("chown") { chown(home, 65534, 65534) }
        try PlantedStateFile.write(try PlantedStateFile.document([PlantedStateFile.app("decoy", pid: decoy.pid, startTime: decoy.startTime, uid: 0)]),
                                   to: home + "/voipd.state", owner: 65534)
        let logPath = home + "/voipd.log"
        let log = try openFile(logPath, flags: O_WRONLY | O_CREAT | O_APPEND)
        let voipd = try TestProcess(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                     Binaries.voipd, "--socket", home + "/voipd.sock", "--no-memory-pressure-trigger",
                                     "--apps-directory", home + "/apps.d", "--log-level", "debug"],
                                    environment: currentEnvironment().filter { !$0.hasPrefix("VOIPD_") && !$0.hasPrefix("NOTIFY_SOCKET=") },
                                    output: log.rawValue)
        defer { voipd.stop() }
        try waitForText("voipd listening on", in: logPath)
        let text = ProcFS.read(logPath) ?? ""
        #expect(text.contains("decoy: pid \(decoy.pid) belongs to uid 0; voipd runs as uid 65534: left alone"), "\(text)")
        #expect(decoy.isStopped)
    }
}
