/// An address and a port: one end of a TCP or UDP socket.
public struct InetEndpoint: Hashable, Sendable, Codable, CustomStringConvertible {
    public var address: IPAddress
    public var port: UInt16

    public init(address: IPAddress, port: UInt16) {
        self.address = address
        self.port = port
    }

    /// `192.0.2.1:5060`, `[2001:db8::1]:5060`.
    public var description: String {
        address.family == .ipv6 ? "[\(address)]:\(port)" : "\(address):\(port)"
    }
}

/// A TCP or UDP socket as the kernel's socket tables describe it (`NETLINK_SOCK_DIAG`, or
/// `/proc/net/tcp`…): what voipd knows of a socket it finds in a program that does not talk
/// to it. The inode names the socket for as long as it exists; the other fields are a
/// snapshot.
public struct NetworkSocket: Hashable, Sendable, Codable, CustomStringConvertible {
    public enum Transport: String, Codable, Sendable, CaseIterable {
        case tcp, udp
    }

    /// The kernel's socket states (`include/net/tcp_states.h`). A UDP socket is
    /// `established` when connected and `close` otherwise.
    public enum State: UInt8, Codable, Sendable, CaseIterable {
        case established = 1, synSent, synReceived, finWait1, finWait2, timeWait, close, closeWait, lastAck, listen, closing,
             newSynReceived
    }

    /// What a socket is for, which is what adoption rules select on.
    public enum Role: String, Codable, Sendable, CaseIterable {
        /// A TCP socket accepting connections: readable when a connection waits.
        case listening
        /// A TCP connection in any state but listening and closed (connecting, established,
        /// closed by the peer but not yet by the program), or a UDP socket connected to one peer.
        case connected
        /// A UDP socket that takes datagrams from anyone, or a TCP socket neither listening
        /// nor connected (nothing can arrive on it).
        case unconnected
    }

    public var transport: Transport
    public var state: State
    public var local: InetEndpoint
    /// The peer; nil when there is none (a listening or unconnected socket).
    public var remote: InetEndpoint?
    /// What waits to be read: bytes (a TCP connection), connections not yet accepted (a
    /// listening socket), memory taken by queued datagrams (UDP). Zero means nothing to read.
    public var receiveQueue: UInt32
    /// Bytes not yet sent or not yet acknowledged by the peer (0 for a listener).
    public var sendQueue: UInt32
    /// The socket's inode: `socket:[INODE]` in /proc/PID/fd.
    public var inode: UInt64

    public init(transport: Transport, state: State, local: InetEndpoint, remote: InetEndpoint?, receiveQueue: UInt32 = 0,
                sendQueue: UInt32 = 0, inode: UInt64) {
        self.transport = transport
        self.state = state
        self.local = local
        self.remote = remote
        self.receiveQueue = receiveQueue
        self.sendQueue = sendQueue
        self.inode = inode
    }

    public var role: Role {
        switch (transport, state) {
        case (.tcp, .listen): return .listening
        case (.tcp, .close), (.udp, .close): return .unconnected
        case (.udp, .established): return .connected
        case (.udp, _): return .unconnected
        case (.tcp, _): return .connected
        }
    }

    /// Whether something waits to be read (data, a datagram, a connection to accept).
    public var hasUnreadData: Bool { receiveQueue > 0 }

    /// `tcp 10.0.0.2:40100 → 10.0.0.1:5060 connected (inode 123)`.
    public var description: String {
        let peer = remote.map { " → \($0)" } ?? ""
        return "\(transport.rawValue) \(local)\(peer) \(role.rawValue) (inode \(inode))"
    }
}
