import Glibc
import VoipdSystem

/// What the presence server saw on one of its connections.
struct PresenceEvent {
    enum Kind {
        case opened(peerPort: UInt16)
        case line(String)
        case closed(String)
    }

    let time: Double
    let connection: Int
    let kind: Kind
}

/// The far end of the softphone's ordinary connection: a tiny line server on loopback. It
/// answers `HELLO USER` with a welcome and `POLL` with who is online, and notes every
/// connection that opens and ends: a reclaimed socket shows here as a connection ended by
/// the softphone's side while the softphone was stopped.
final class PresenceServer: EventSource {
    private final class Connection {
        let descriptor: FileDescriptor
        var pending: [UInt8] = []
        init(_ descriptor: consuming FileDescriptor) { self.descriptor = descriptor }
    }

    private let listener: FileDescriptor
    let port: UInt16
    private var connections: [Int: Connection] = [:]
    private var nextID = 1
    private(set) var events: [PresenceEvent] = []

    init() throws {
        listener = try Socket.listenTCP()
        try listener.setNonBlocking()
        port = try Socket.localPort(listener)
    }

    var descriptors: [Int32] { [listener.rawValue] + connections.keys.sorted().compactMap { connections[$0]?.descriptor.rawValue } }

    func service(_ fd: Int32) throws {
        if fd == listener.rawValue { return try acceptAll() }
        guard let (id, connection) = connections.first(where: { $0.value.descriptor.rawValue == fd }) else { return }
        let bytes: [UInt8]
        do {
            bytes = try connection.descriptor.read(upTo: 4096)
        } catch .wouldBlock {
            return
        } catch {
            return close(id, reason: "\(error)")
        }
        guard !bytes.isEmpty else { return close(id, reason: "ended by the softphone's side") }
        connection.pending += bytes
        while let newline = connection.pending.firstIndex(of: 0x0A) {
            let line = String(decoding: connection.pending[..<newline], as: UTF8.self)
            connection.pending.removeSubrange(...newline)
            note(id, .line(line))
            let answer = line.hasPrefix("HELLO ") ? "WELCOME \(line.dropFirst(6))" : "bob online, carol away"
            try? connection.descriptor.writeAll(Array((answer + "\n").utf8))
        }
    }

    /// Connections opened so far.
    var openedCount: Int { events.filter { if case .opened = $0.kind { true } else { false } }.count }

    /// Whether connection `id` has ended.
    func hasClosed(_ id: Int) -> Bool {
        events.contains { if case .closed = $0.kind { $0.connection == id } else { false } }
    }

    /// Whether connection `id` has said something starting with `prefix`.
    func hasLine(_ id: Int, startingWith prefix: String) -> Bool {
        events.contains { if case .line(let text) = $0.kind { $0.connection == id && text.hasPrefix(prefix) } else { false } }
    }

    private func acceptAll() throws {
        while case .processed(let accepted) = try Socket.accept(listener) {
            let id = nextID
            nextID += 1
            let connection = Connection(accepted)
            connections[id] = connection
            note(id, .opened(peerPort: peerPort(of: connection.descriptor.rawValue)))
        }
    }

    private func close(_ id: Int, reason: String) {
        connections[id] = nil
        note(id, .closed(reason))
    }

    private func note(_ id: Int, _ kind: PresenceEvent.Kind) {
        events.append(PresenceEvent(time: WallClock.now, connection: id, kind: kind))
    }
}

/// The peer's port of a connected IPv4 socket.
private func peerPort(of fd: Int32) -> UInt16 {
    var address = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let status = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
    }
    return status == 0 ? UInt16(bigEndian: address.sin_port) : 0
}
