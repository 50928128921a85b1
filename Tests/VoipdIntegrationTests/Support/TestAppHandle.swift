import Foundation
import Glibc
import VoipdSystem

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
        guard let connection = try Socket.accept(listener, nonBlocking: false) else { throw TimedOut(description: "accept") }
        return TestAppHandle(name: name, channel: connection)
    }
}

/// One run of the test app: what it reported, and a way to send it commands.
final class TestAppHandle {
    let name: String
    let channel: FileDescriptor
    private var buffer: [UInt8] = []
    /// Every report received, in order.
    private(set) var history: [[String: Any]] = []
    private var unread: [[String: Any]] = []
    private(set) var pid: pid_t = 0

    init(name: String, channel: consuming FileDescriptor) {
        self.name = name
        self.channel = channel
    }

    /// Sends one command.
    func send(_ command: [String: Any]) throws {
        var data = try JSONSerialization.data(withJSONObject: command)
        data.append(0x0a)
        try channel.writeAll(Array(data))
    }

    /// The first report (not yet consumed) matching `predicate`, waiting up to the timeout.
    @discardableResult
    func expect(timeout: Duration = .seconds(20), _ predicate: ([String: Any]) -> Bool) throws -> [String: Any] {
        let deadline = Deadline(timeout)
        while true {
            // Only the match is consumed: reports arrive in whatever order the app's loop
            // met things, and an earlier one may be the next thing a test looks for.
            if let index = unread.firstIndex(where: predicate) { return unread.remove(at: index) }
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
                guard let report = try JSONSerialization.jsonObject(with: line) as? [String: Any] else { continue }
                if report["event"] as? String == "hello", let pid = report["pid"] as? Int { self.pid = pid_t(pid) }
                history.append(report)
                unread.append(report)
            }
        }
    }

    /// The next lifecycle event of `kind`.
    @discardableResult
    func expectEvent(_ kind: String, timeout: Duration = .seconds(20)) throws -> [String: Any] {
        try expect(timeout: timeout) { $0["event"] as? String == "lifecycle" && $0["kind"] as? String == kind }
    }

    /// Whether an event of `kind` was reported at any time.
    func received(_ kind: String) -> Bool {
        history.contains { $0["event"] as? String == "lifecycle" && $0["kind"] as? String == kind }
    }

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
        guard let fd = try Socket.accept(listener, nonBlocking: false) else { throw TimedOut(description: "accept") }
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

    /// What arrives within the timeout as text ("" at end of file, nil when nothing came).
    func read(timeout: Duration = .seconds(20)) throws -> String? {
        guard waitReadable(descriptor.rawValue, Deadline(timeout)) else { return nil }
        return String(decoding: try descriptor.read(upTo: 65536), as: UTF8.self)
    }
}
