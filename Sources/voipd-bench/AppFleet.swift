import Glibc
import VoipClient
import VoipdProtocol
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// The bench's end of one app's VoIP socket: the peer writes the stamps here.
final class PeerEnd {
    let descriptor: FileDescriptor
    init(_ descriptor: consuming FileDescriptor) { self.descriptor = descriptor }
}

/// One app process, by pidfd: it can be killed without any pid-reuse race.
final class AppProcessHandle {
    let pidfd: PidFd
    init(_ pidfd: consuming PidFd) { self.pidfd = pidfd }
}

/// N copies of the bench's app (`voipd-bench app`, or `Benchmarks/wake_app.c`) launched by
/// voipd (so they are its children, as in real use), each with its VoIP socket connected to
/// this process and registered, sent to the background and suspended. Also the control
/// connection that follows voipd's event stream, and the pipe the apps report on.
final class AppFleet {
    let control: VoipdControl
    let reports: LineReader
    private(set) var peers: [PeerEnd] = []
    private(set) var processes: [AppProcessHandle] = []
    private let listener: FileDescriptor
    private let listenerPath: String
    private let reportWriteEnd: FileDescriptor

    init(daemon: DaemonUnderTest, directory: String) throws {
        control = try VoipdControl(socketPath: daemon.socketPath)
        // Followed from the start, so no transition is missed; only those it waits for, so
        // that no wake's own transition (to background) wakes the bench in the middle of it.
        _ = try control.events(follow: true, to: [.suspended, .terminated])
        listenerPath = directory + "/peer.sock"
        listener = try Socket.listenUnix(path: listenerPath, type: Socket.streamType, backlog: 4096)
        let pipe = try makePipe()
        reports = LineReader(pipe.first)
        reportWriteEnd = pipe.second
    }

    static func name(_ index: Int) -> String { "bench-\(index)" }

    /// Launches `count` copies of `app`, accepts their VoIP sockets, sends each to the
    /// background once its socket is registered, and waits until all are suspended.
    func start(_ app: WakeApp, count: Int, appCPU: Int?) throws {
        for index in 0..<count {
            let arguments = app.command + ["--connect", listenerPath, "--index", "\(index)"]
                + (appCPU.map { ["--cpu", "\($0)"] } ?? [])
            let status = try control.launch(arguments, name: Self.name(index), output: reportWriteEnd.rawValue)
            guard let pid = status.pid else { throw BenchError("\(Self.name(index)) did not start: \(status.state)") }
            processes.append(AppProcessHandle(try PidFd(pid: pid)))
        }
        var accepted = [PeerEnd?](repeating: nil, count: count)
        for _ in 0..<count {
            let (index, peer) = try acceptApp(count: count)
            guard accepted[index] == nil else { throw BenchError("two apps announced index \(index)") }
            accepted[index] = peer
            try control.command(.background, Self.name(index))
        }
        peers = accepted.map { $0! }
        var pending = Set((0..<count).map(Self.name))
        while !pending.isEmpty {
            guard let record = try control.nextTransition(timeoutMilliseconds: 60_000) else {
                throw BenchError("\(pending.count) apps not suspended after 60 s without a transition (e.g. \(pending.first!))")
            }
            try check(record)
            if record.to == .suspended { pending.remove(record.app) }
        }
    }

    /// Waits for the next app to connect its VoIP socket and announce its index.
    private func acceptApp(count: Int) throws -> (Int, PeerEnd) {
        guard try waitReadable(listener.rawValue, until: MonotonicInstant.now + .seconds(60)) else {
            throw BenchError("no app connected within 60 s")
        }
        guard let connection = try Socket.accept(listener, nonBlocking: false).processed() else { return try acceptApp(count: count) }
        guard try waitReadable(connection.rawValue, until: MonotonicInstant.now + .seconds(30)) else { throw BenchError("an app connected but did not announce itself") }
        var index: UInt32 = 0
        guard recv(connection.rawValue, &index, 4, CInt(MSG_WAITALL)) == 4, Int(UInt32(littleEndian: index)) < count else {
            throw BenchError("an app connected with a bad announcement")
        }
        return (Int(UInt32(littleEndian: index)), PeerEnd(connection))
    }

    /// Waits until the app is suspended again (the stop confirmed by voipd).
    func waitForSuspension(of index: Int) throws {
        let name = Self.name(index)
        while true {
            guard let record = try control.nextTransition(timeoutMilliseconds: 10_000) else {
                throw BenchError("\(name) was not suspended again within 10 s")
            }
            try check(record)
            if record.app == name && record.to == .suspended { return }
        }
    }

    private func check(_ record: TransitionRecord) throws {
        guard record.to == .terminated else { return }
        var detail = ""
        while let line = try? reports.next(timeoutMilliseconds: 0) { detail += "\n  " + line }
        throw BenchError("\(record.app) terminated: \(record.reason)\(detail)")
    }

    /// What voipd says of an app and its VoIP socket, for a failure message.
    func describe(_ index: Int) -> String {
        let name = Self.name(index)
        let app = (try? control.app(name)).map { "\($0.state.rawValue), \($0.wakes) wakes" } ?? "unknown"
        let socket = (try? control.sockets(name))?.first
            .map { "\($0.bytesAvailable) bytes waiting, \($0.watching ? "watched" : "not watched")" } ?? "unknown"
        return "\(app); its VoIP socket: \(socket)"
    }

    /// Kills every app process still alive (voipd has normally ended them already).
    /// Kills every app and waits (10 s at most) until each has ended: the next
    /// configuration's voipd, in the same directory, must not find one still running in the
    /// state file this one's voipd left.
    func killAll() {
        for process in processes {
            try? process.pidfd.send(SIGKILL)
        }
        let deadline = MonotonicInstant.now + .seconds(10)
        for process in processes {
            var watched = pollfd(fd: process.pidfd.descriptor.rawValue, events: Int16(POLLIN), revents: 0)
            while MonotonicInstant.now < deadline {
                let ready = poll(&watched, 1, pollTimeout(until: deadline))
                if ready > 0 || (ready < 0 && errno != EINTR) { break }
            }
        }
    }

    /// Resident memory of the apps: one app's RSS and the sum of their proportional sets
    /// (shared pages divided among the processes that share them).
    func memory() -> (oneRSS: UInt64, totalPSS: UInt64) {
        let one = processes.first.flatMap { ProcFS.residentBytes(of: $0.pidfd.pid) } ?? 0
        let total = processes.reduce(UInt64(0)) { sum, process in
            let rollup = ProcFS.read("/proc/\(process.pidfd.pid)/smaps_rollup") ?? ""
            let kilobytes = rollup.split(separator: "\n").first { $0.hasPrefix("Pss:") }
                .flatMap { UInt64(String($0.filter(\.isNumber))) } ?? 0
            return sum + kilobytes * 1024
        }
        return (one, total)
    }
}

