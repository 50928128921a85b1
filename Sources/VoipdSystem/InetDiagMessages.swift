import CVoipd
import Glibc
import VoipdVocabulary

/// The messages of the kernel's inet socket diagnostics (`NETLINK_SOCK_DIAG`,
/// `SOCK_DIAG_BY_FAMILY`, `linux/inet_diag.h`): a dump request, and the decoding of the
/// replies. No system calls here: ``SocketDiagnostics`` sends and receives them.
public enum InetDiagMessages {
    static let headerSize = MemoryLayout<nlmsghdr>.size
    static let requestSize = MemoryLayout<inet_diag_req_v2>.size
    static let recordSize = MemoryLayout<inet_diag_msg>.size

    /// TCP states a descriptor can be attached to: every state but `TIME_WAIT` and the two
    /// `SYN_RECV` kinds, which are the kernel's mini-sockets with no inode and no owner.
    /// Asking only for these lets the kernel skip them.
    public static let tcpStatesWithOwners: UInt32 = {
        let ownerless: [NetworkSocket.State] = [.timeWait, .synReceived, .newSynReceived]
        return NetworkSocket.State.allCases.filter { !ownerless.contains($0) }.reduce(0) { $0 | 1 << UInt32($1.rawValue) }
    }()

    /// A dump request for every socket of one family (`AF_INET`, `AF_INET6`) and protocol
    /// (`IPPROTO_TCP`, `IPPROTO_UDP`) in `states` (a bit per ``NetworkSocket/State``), and
    /// with `localPort`, only those bound to that port: the kernel filters (a bytecode
    /// attribute, `INET_DIAG_BC_S_EQ`), so a busy table costs voipd nothing but the matches.
    public static func dumpRequest(family: CInt, protocol: CInt, states: UInt32, sequence: UInt32, localPort: UInt16? = nil) -> [UInt8] {
        let filter = localPort.map(localPortFilter) ?? []
        var header = nlmsghdr()
        header.nlmsg_len = UInt32(headerSize + requestSize + filter.count)
        header.nlmsg_type = UInt16(SOCK_DIAG_BY_FAMILY)
        header.nlmsg_flags = voipd_NLM_F_REQUEST | voipd_NLM_F_DUMP
        header.nlmsg_seq = sequence
        var request = inet_diag_req_v2()
        request.sdiag_family = UInt8(family)
        request.sdiag_protocol = UInt8(`protocol`)
        request.idiag_states = states
        return withUnsafeBytes(of: header) { Array($0) } + withUnsafeBytes(of: request) { Array($0) } + filter
    }

    /// The `INET_DIAG_REQ_BYTECODE` attribute "local port == `port`": an `rtattr` header and
    /// two `inet_diag_bc_op`s, the comparison and its operand. A match jumps to the end of the
    /// program (`yes` = 8: accepted), a mismatch past it (`no` = 12: rejected).
    static func localPortFilter(_ port: UInt16) -> [UInt8] {
        let compare = inet_diag_bc_op(code: UInt8(INET_DIAG_BC_S_EQ), yes: 8, no: 12)
        let operand = inet_diag_bc_op(code: 0, yes: 0, no: port)
        let program = withUnsafeBytes(of: compare) { Array($0) } + withUnsafeBytes(of: operand) { Array($0) }
        // struct rtattr { unsigned short rta_len, rta_type; }, in host order like the rest.
        let attributeHeader = [UInt16(4 + program.count), UInt16(INET_DIAG_REQ_BYTECODE)]
        return attributeHeader.withUnsafeBytes { Array($0) } + program
    }

    /// What one datagram of a dump's replies held.
    public enum Batch: Equatable {
        /// Sockets, then more datagrams to read.
        case sockets([NetworkSocket])
        /// The last sockets: the dump is complete.
        case done([NetworkSocket])
    }

    /// Decodes one datagram of replies to the request numbered `sequence`. An error the
    /// kernel sent (`NLMSG_ERROR`) is thrown as its ``Errno``; a message that does not fit in
    /// the datagram or is too short for its type throws `EBADMSG`; replies to another request
    /// are skipped. A record of a state unknown to this build is skipped too.
    public static func decode(_ datagram: UnsafeRawBufferPointer, transport: NetworkSocket.Transport, sequence: UInt32) throws -> Batch {
        var sockets: [NetworkSocket] = []
        var offset = 0
        while datagram.count - offset >= headerSize {
            let header = datagram.loadUnaligned(fromByteOffset: offset, as: nlmsghdr.self)
            let length = Int(header.nlmsg_len)
            guard length >= headerSize, length <= datagram.count - offset else {
                throw Errno(EBADMSG, call: "NETLINK_SOCK_DIAG: a message of \(length) bytes in \(datagram.count - offset)")
            }
            let body = UnsafeRawBufferPointer(rebasing: datagram[(offset + headerSize)..<(offset + length)])
            // Messages are aligned to 4 bytes (NLMSG_ALIGN).
            offset += min((length + 3) & ~3, datagram.count - offset)
            guard header.nlmsg_seq == sequence else { continue }
            switch CInt(header.nlmsg_type) {
            case NLMSG_DONE:
                return .done(sockets)
            case NLMSG_ERROR:
                guard body.count >= MemoryLayout<CInt>.size else { throw Errno(EBADMSG, call: "NETLINK_SOCK_DIAG: a short error message") }
                let error = body.loadUnaligned(as: CInt.self)
                // An error of 0 is an acknowledgement, which a dump does not ask for.
                if error != 0 { throw Errno(-error, call: "NETLINK_SOCK_DIAG") }
            case CInt(SOCK_DIAG_BY_FAMILY):
                guard body.count >= recordSize else { throw Errno(EBADMSG, call: "NETLINK_SOCK_DIAG: a record of \(body.count) bytes") }
                if let socket = record(body.loadUnaligned(as: inet_diag_msg.self), transport: transport) { sockets.append(socket) }
            default:
                continue
            }
        }
        return .sockets(sockets)
    }

    static func record(_ message: inet_diag_msg, transport: NetworkSocket.Transport) -> NetworkSocket? {
        guard let state = NetworkSocket.State(rawValue: message.idiag_state) else { return nil }
        let length: Int
        switch CInt(message.idiag_family) {
        case AF_INET: length = 4
        case AF_INET6: length = 16
        default: return nil
        }
        func endpoint<T>(_ address: T, _ port: UInt16) -> InetEndpoint {
            let bytes = withUnsafeBytes(of: address) { Array($0.prefix(length)) }
            return InetEndpoint(address: IPAddress(bytes: bytes)!, port: UInt16(bigEndian: port))
        }
        let local = endpoint(message.id.idiag_src, message.id.idiag_sport)
        let peer = endpoint(message.id.idiag_dst, message.id.idiag_dport)
        let hasPeer = !(peer.address.isUnspecified && peer.port == 0)
        // For a listener the kernel reports its backlog limit as the send queue; /proc/net
        // says 0, as does ``NetworkSocket/sendQueue``.
        return NetworkSocket(transport: transport, state: state, local: local, remote: hasPeer ? peer : nil,
                             receiveQueue: message.idiag_rqueue, sendQueue: state == .listen ? 0 : message.idiag_wqueue,
                             inode: UInt64(message.idiag_inode))
    }
}
