import Glibc
import VoipdVocabulary

/// The connections that came to a listening TCP socket, as the kernel's socket table shows
/// them: what a ``ReceiveMark`` of a listener compares, since a listener keeps no count of
/// the connections it has had (`TCP_INFO` gives only the accept queue's length, which an
/// `accept` empties).
enum ListenerConnections {
    /// Whether `socket` is listening; a descriptor that cannot say is taken as not listening
    /// (its mark then falls to the other kinds, which say what they can).
    static func isListener(_ socket: borrowing FileDescriptor) -> Bool {
        do {
            return try Socket.isListening(socket)
        } catch {
            return false
        }
    }

    /// The peers of the TCP connections on the listener's address and port, waiting in its
    /// accept queue or accepted (with `acceptedOnly`, only those accepted: a connection in
    /// the queue has no inode yet); nil when the listener is not in the table voipd can read
    /// (another network namespace, no `inet_diag`) or more than `limit` sockets share its port.
    static func peers(of listener: borrowing FileDescriptor, limit: Int, acceptedOnly: Bool = false) -> Set<InetEndpoint>? {
        do {
            guard let local = try Socket.localEndpoint(of: listener) else { return nil }
            let inode = try Socket.inode(of: listener)
            let family = local.address.family == .ipv6 ? AF_INET6 : AF_INET
            var peers = Set<InetEndpoint>()
            var foundListener = false
            let diagnostics = try SocketDiagnostics()
            try diagnostics.dump(family: family, transport: .tcp, states: InetDiagMessages.tcpStatesWithOwners, limit: limit + 1,
                                 localPort: local.port) { sockets in
                for socket in sockets {
                    if socket.state == .listen {
                        if socket.inode == inode { foundListener = true }
                    } else if let remote = socket.remote, local.address.isUnspecified || socket.local.address == local.address,
                              !acceptedOnly || socket.inode != 0 {
                        peers.insert(remote)
                    }
                }
                return true
            }
            // The table of another namespace (or a kernel without it) would show other sockets.
            return foundListener ? peers : nil
        } catch {
            return nil
        }
    }
}
