import Glibc
import VoipdSystem
import VoipdTestSupport

/// One sd_notify datagram: its `KEY=VALUE` lines.
struct NotifyMessage: CustomStringConvertible {
    let lines: [String]

    /// The value of `key` (the last one given), nil if the message has none.
    subscript(key: String) -> String? {
        lines.last { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    func has(_ line: String) -> Bool { lines.contains(line) }

    var description: String { lines.joined(separator: " ") }
}

/// What systemd does for a `Type=notify` service, played by the test: the socket of
/// `$NOTIFY_SOCKET` (a datagram socket it binds; messages received with `recvmsg` and
/// `SCM_RIGHTS`), the file descriptor store that `FDSTORE=1` fills and `FDSTOREREMOVE=1`
/// empties, and starting the service with descriptors in `$LISTEN_FDS`.
final class ServiceManagerStandIn {
    let path: String
    private let socket: FileDescriptor
    /// Every message received, in order.
    private(set) var messages: [NotifyMessage] = []
    /// The messages an expect has returned: each is returned once.
    private var consumed = Set<Int>()
    /// The fd store: descriptors by FDNAME, in the order stored (the order systemd passes
    /// them back in).
    private(set) var store: [(name: String, descriptor: DescriptorBox)] = []

    init(path: String) throws {
        self.path = path
        socket = try Socket.make(domain: AF_UNIX, type: Socket.datagramType)
        try bindDatagram(socket, path: path)
    }

    /// The first message not yet returned that has `line`, waiting for it until the
    /// timeout. Messages arrive in the order sent; each is returned once.
    @discardableResult
    func expect(_ line: String, timeout: Duration = .seconds(20), context: @autoclosure () -> String = "") throws -> NotifyMessage {
        try expect(line, timeout: timeout, context: context()) { $0.has(line) }
    }

    /// The first message not yet returned that matches, waiting for it until the timeout
    /// (`what` names it in the failure).
    @discardableResult
    func expect(_ what: String, timeout: Duration = .seconds(20), context: @autoclosure () -> String = "",
                where predicate: (NotifyMessage) -> Bool) throws -> NotifyMessage {
        let deadline = Deadline(timeout)
        while true {
            if let index = messages.indices.first(where: { !consumed.contains($0) && predicate(messages[$0]) }) {
                consumed.insert(index)
                return messages[index]
            }
            guard waitReadable(socket.rawValue, deadline) else {
                throw TimedOut(description: "no \(what) on the notify socket; received: \(messages)\n\(context())")
            }
            try receiveOne()
        }
    }

    /// Receives whatever has arrived, without waiting.
    func receiveWaiting() throws {
        while waitReadable(socket.rawValue, Deadline(.zero)) { try receiveOne() }
    }

    private func receiveOne() throws {
        guard case .processed(let received) = try Socket.receive(socket, maxBytes: 4096, maxDescriptors: 16) else { return }
        let message = NotifyMessage(lines: String(decoding: received.bytes, as: UTF8.self).split(separator: "\n").map(String.init))
        messages.append(message)
        if message.has("FDSTORE=1") {
            let name = message["FDNAME"] ?? "stored"
            for index in 0..<received.descriptors.count {
                if let descriptor = received.descriptors.take(index) { store.append((name, DescriptorBox(descriptor))) }
            }
        }
        if message.has("FDSTOREREMOVE=1"), let name = message["FDNAME"] {
            store.removeAll { $0.name == name }
        }
    }

    /// Starts `arguments` as systemd starts a service: `passing` as descriptors 3, 4, …
    /// named in `$LISTEN_FDNAMES`, `$LISTEN_FDS`, and `$LISTEN_PID` set to the pid of the
    /// service itself (which the parent cannot know before the fork: a shell exports its
    /// own pid and execs the program, keeping that pid), with `$NOTIFY_SOCKET` this socket.
    func start(_ arguments: [String], passing descriptors: [(name: String, descriptor: CInt)], environment: [String] = [],
               output: CInt) throws -> TestProcess {
        let inherited = currentEnvironment().filter { entry in
            !["VOIPD_", "NOTIFY_SOCKET=", "LISTEN_", "WATCHDOG_"].contains { entry.hasPrefix($0) }
        }
        var variables = inherited + ["NOTIFY_SOCKET=\(path)"] + environment
        var wrapper: [String] = []
        if !descriptors.isEmpty {
            variables += ["LISTEN_FDS=\(descriptors.count)", "LISTEN_FDNAMES=\(descriptors.map(\.name).joined(separator: ":"))"]
            wrapper = ["/bin/sh", "-c", "LISTEN_PID=$$; export LISTEN_PID; exec \"$@\"", "sh"]
        }
        return try TestProcess(wrapper + arguments, environment: variables, output: output, extraDescriptors: descriptors.map(\.descriptor))
    }
}

/// The remote port of a TCP socket (`getpeername`).
func remotePort(_ fd: CInt) throws -> UInt16 {
    var address = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = try withUnsafeMutablePointer(to: &address) { pointer in
        try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
            try valueOrErrno("getpeername") { getpeername(fd, sa, &length) }
        }
    }
    return UInt16(bigEndian: address.sin_port)
}

/// The uid a process runs as (the real uid of /proc/PID/status's Uid: line).
func processUID(_ pid: pid_t) -> uid_t? {
    guard let status = ProcFS.read("/proc/\(pid)/status"),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Uid:") }) else { return nil }
    return line.split(whereSeparator: { $0 == "\t" || $0 == " " }).dropFirst().first.flatMap { uid_t($0) }
}
