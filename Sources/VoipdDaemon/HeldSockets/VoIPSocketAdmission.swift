import VoipdProtocol
import VoipdSystem

/// Which sockets an app may hand voipd as VoIP sockets (`registerSocket`): those on which
/// something can arrive that should wake it.
/// - A connected socket of any domain (TCP, a connected UDP socket, Unix stream, seqpacket
///   or datagram): data from its peer.
/// - A listening TCP socket: a connection to accept, which the app does when it runs; voipd
///   never accepts one. iOS held neither this nor the next (a deliberate extension).
/// - A bound UDP socket that is not connected: a datagram from anyone.
/// Refused with a code saying why: a listener of another kind (`listeningSocket`), a socket
/// on which nothing can arrive, or whose unconnected use voipd does not support
/// (`notConnected`).
enum VoIPSocketAdmission {
    /// Nil when `kind` can be held; otherwise the error to answer.
    static func refusal(of kind: SocketKind, named name: String) -> ProtocolError? {
        switch kind.role {
        case .connected:
            return nil
        case .listening:
            guard kind.isNetwork && kind.isStream else {
                return ProtocolError(.listeningSocket, "\(name) is a listening \(kind.name) socket; only a TCP listener can be a VoIP socket")
            }
            return nil
        case .unconnected:
            guard kind.isNetwork && kind.isDatagram else {
                return ProtocolError(.notConnected, "\(name) (\(kind.name)) is not connected; of the unconnected sockets only a bound UDP socket can be a VoIP socket")
            }
            guard let port = kind.localPort, port != 0 else {
                return ProtocolError(.notConnected, "\(name) (\(kind.name)) is neither connected nor bound: nothing can arrive on it; bind or connect it first")
            }
            return nil
        }
    }
}
