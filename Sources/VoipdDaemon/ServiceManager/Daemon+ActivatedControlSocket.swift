import Glibc
import VoipdSystem

extension Daemon {
    /// A control socket passed by the service manager must be what voipd would have bound: a
    /// listening `AF_UNIX` `SOCK_SEQPACKET` socket. A `ListenStream=` or `ListenDatagram=`
    /// unit would make every client fail (`EPROTOTYPE`) while voipd seemed to run: it is a
    /// configuration error instead (exit 78).
    static func checkActivatedControlSocket(_ fd: borrowing FileDescriptor) throws {
        let kind: SocketKind?
        do {
            kind = try Socket.kind(of: fd)
        } catch {
            throw ConfigurationError("cannot inspect the control socket passed by the service manager (descriptor \(fd.rawValue)): \(error)")
        }
        guard let kind, kind.domain == AF_UNIX, kind.type == Socket.seqpacketType, kind.isListening else {
            let what = kind.map { "a \($0.isListening ? "listening " : "")\($0.name) socket" } ?? "not a socket"
            throw ConfigurationError("the control socket passed by the service manager (descriptor \(fd.rawValue)) is \(what), not a listening unix-seqpacket socket: its socket unit must use ListenSequentialPacket=PATH (not ListenStream= or ListenDatagram=)")
        }
    }
}
