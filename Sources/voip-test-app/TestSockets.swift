import Glibc
import VoipdSystem

/// The sockets the test app holds, by name: VoIP sockets, ordinary connections, listeners.
final class TestSocket {
    let name: String
    let descriptor: FileDescriptor
    let isVoIP: Bool
    let isListener: Bool
    /// A connection accepted on a VoIP listener: read like a VoIP socket, though not held.
    let isAccepted: Bool
    /// A UDP socket with no peer: answered with `sendto` the sender.
    let isUnconnectedDatagram: Bool

    init(name: String, descriptor: consuming FileDescriptor, isVoIP: Bool, isListener: Bool = false, isAccepted: Bool = false,
         isUnconnectedDatagram: Bool = false) {
        self.name = name
        self.descriptor = descriptor
        self.isVoIP = isVoIP
        self.isListener = isListener
        self.isAccepted = isAccepted
        self.isUnconnectedDatagram = isUnconnectedDatagram
    }

    /// Whether the app reads it on its own when it is readable.
    var isRead: Bool { isVoIP || isAccepted }
}

/// A command named a socket the app does not have.
struct NoSuchSocket: Error, CustomStringConvertible {
    var name: String
    var description: String { "no socket \(name)" }
}

/// "tcp:HOST:PORT" or "unix:PATH".
func connectAddress(_ address: String) throws -> FileDescriptor {
    if address.hasPrefix("unix:") {
        return try Socket.connectUnix(path: String(address.dropFirst(5)), type: Socket.streamType)
    }
    let parts = address.split(separator: ":")
    guard parts.count == 3, parts[0] == "tcp", let port = UInt16(parts[2]) else { throw Errno(EINVAL, call: "address \(address)") }
    return try Socket.connectTCP(host: String(parts[1]), port: port)
}
