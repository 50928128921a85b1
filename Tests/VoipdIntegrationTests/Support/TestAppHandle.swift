import Foundation
import Glibc
import TestAppMessages
import VoipClient
import VoipdSystem
import VoipdVocabulary

/// Where test apps report: a Unix stream socket the test listens on.
final class ReportServer {
    let path: String
    let listener: FileDescriptor

    init(path: String) throws {
        self.path = path
        listener = try Socket.listenUnix(path: path, type: Socket.streamType)
        try listener.setNonBlocking(false)
    }

    func accept(name: String, timeout: Duration) throws -> TestAppHandle {
        guard waitReadable(listener.rawValue, Deadline(timeout)) else { throw TimedOut(description: "\(name) did not connect its report channel") }
        guard case .processed(let connection) = try Socket.accept(listener, nonBlocking: false) else { throw TimedOut(description: "accept") }
        return TestAppHandle(name: name, channel: connection)
    }
}

/// One run of the test app: what it reported, and a way to send it commands.
final class TestAppHandle {
    let name: String
    let channel: FileDescriptor
    private var buffer: [UInt8] = []
    /// Every report received, in order.
    private(set) var history: [TestAppReport] = []
    private var unread: [TestAppReport] = []
    private(set) var pid: pid_t = 0

    init(name: String, channel: consuming FileDescriptor) {
        self.name = name
        self.channel = channel
    }

    /// Sends one command.
    func send(_ command: TestAppCommand) throws {
        var data = try JSONEncoder().encode(command)
        data.append(0x0a)
        try channel.writeAll(Array(data))
    }

    /// The content of the first report (not yet consumed) that has one at `path`
    /// (`\.taskID`: the id of the next `task` report).
    @discardableResult
    func expect<Value>(_ path: KeyPath<TestAppReport, Value?>, timeout: Duration = .seconds(20)) throws -> Value {
        try take(timeout: timeout) { $0[keyPath: path] }
    }

    /// The first report (not yet consumed) equal to `report`.
    func expect(_ report: TestAppReport, timeout: Duration = .seconds(20)) throws {
        try take(timeout: timeout) { $0 == report ? () : nil }
    }

    /// The first report (not yet consumed) of which `predicate` holds.
    @discardableResult
    func expect(timeout: Duration = .seconds(20), where predicate: (TestAppReport) -> Bool) throws -> TestAppReport {
        try take(timeout: timeout) { predicate($0) ? $0 : nil }
    }

    /// The next lifecycle event of `kind`.
    @discardableResult
    func expectEvent(_ kind: AppEventKind, timeout: Duration = .seconds(20)) throws -> TestAppReport.Event {
        try take(timeout: timeout) { $0.event?.kind == kind ? $0.event : nil }
    }

    /// What the app read next from `socket`.
    @discardableResult
    func expectRead(_ socket: String, timeout: Duration = .seconds(20)) throws -> TestAppReport.ReadOutcome {
        try take(timeout: timeout) { $0.read?.socket == socket ? $0.read?.outcome : nil }
    }

    /// The first report (not yet consumed) that `match` takes (returns a value for), waiting
    /// up to the timeout; the value.
    @discardableResult
    private func take<Value>(timeout: Duration, _ match: (TestAppReport) -> Value?) throws -> Value {
        let deadline = Deadline(timeout)
        while true {
            // Only the match is consumed: reports arrive in whatever order the app's loop
            // met things, and an earlier one may be the next thing a test looks for.
            for (index, report) in unread.enumerated() {
                if let value = match(report) {
                    unread.remove(at: index)
                    return value
                }
            }
            guard waitReadable(channel.rawValue, deadline) else {
                let wchan = ProcFS.read("/proc/\(pid)/wchan") ?? "?"
                throw TimedOut(description: "\(name): no matching report; seen: \(unread); pid \(pid) state \(processState(pid).map(String.init) ?? "gone") wchan \(wchan)")
            }
            let bytes = try channel.read(upTo: 65536)
            if bytes.isEmpty { throw TimedOut(description: "\(name): report channel closed; seen: \(unread)") }
            buffer += bytes
            while let newline = buffer.firstIndex(of: 0x0a) {
                let line = Data(buffer[..<newline])
                buffer.removeSubrange(...newline)
                let report = try JSONDecoder().decode(TestAppReport.self, from: line)
                if let hello = report.hello { pid = hello.pid }
                history.append(report)
                unread.append(report)
            }
        }
    }

    /// Has the app connect to `peer` and register that connection as its VoIP socket `name`;
    /// the peer's end, once voipd has confirmed the registration to the app.
    @discardableResult
    func registerVoIPSocket(_ name: String, connectedTo peer: TCPPeer) throws -> PeerConnection {
        try send(.register(socket: name, address: peer.address))
        let remote = try peer.accept()
        try expect(.registered(socket: name))
        return remote
    }

    /// Whether an event of `kind` was reported at any time.
    func received(_ kind: AppEventKind) -> Bool {
        history.contains { $0.event?.kind == kind }
    }

    /// The app's first hello.
    var hello: TestAppReport.Hello? { history.lazy.compactMap(\.hello).first }

    func stopProcesses() {
        guard pid > 0 else { return }
        kill(pid, SIGCONT)
        kill(pid, SIGKILL)
    }
}

/// The far end of an app's VoIP or ordinary connection: a TCP listener on loopback.
final class TCPPeer {
    let listener: FileDescriptor
    let port: UInt16

    init() throws {
        listener = try Socket.listenTCP()
        port = try Socket.localPort(listener)
    }

    var address: String { "tcp:127.0.0.1:\(port)" }

    /// Every connection accepted, kept open as long as the peer (Swift may release a local
    /// after its last use; a test's far ends must not close before the test ends).
    private(set) var connections: [PeerConnection] = []

    func accept(timeout: Duration = .seconds(20)) throws -> PeerConnection {
        guard waitReadable(listener.rawValue, Deadline(timeout)) else { throw TimedOut(description: "no connection to port \(port)") }
        guard case .processed(let fd) = try Socket.accept(listener, nonBlocking: false) else { throw TimedOut(description: "accept") }
        let connection = PeerConnection(fd)
        connections.append(connection)
        return connection
    }
}

/// The test's end of a connection.
final class PeerConnection {
    let descriptor: FileDescriptor

    init(_ descriptor: consuming FileDescriptor) { self.descriptor = descriptor }

    func write(_ text: String) throws { try descriptor.writeAll(Array(text.utf8)) }

    /// Waits until the app's end has acknowledged every byte written here (`SIOCOUTQ` is 0).
    /// On loopback a `write` can return before its bytes reach the other socket: the
    /// loopback device's receive side may run later (in ksoftirqd, on a busy machine). The
    /// receiving socket acknowledges only after it has queued them and woken its watchers
    /// (epoll sets, nested ones too), so after this they are ready for anyone watching it.
    func waitUntilAcknowledged() throws {
        try waitUntil("the far end acknowledged every byte") {
            try NetworkSocket.describing(descriptor, transport: .tcp, inode: 0)?.sendQueue == 0
        }
    }

    /// What arrives within the timeout as text ("" at end of file, nil when nothing came).
    func read(timeout: Duration = .seconds(20)) throws -> String? {
        guard waitReadable(descriptor.rawValue, Deadline(timeout)) else { return nil }
        return String(decoding: try descriptor.read(upTo: 65536), as: UTF8.self)
    }
}
