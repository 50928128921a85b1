import Glibc
import VoipdVocabulary

/// The kernel's TCP and UDP socket tables as text: /proc/PID/net/tcp, tcp6, udp and udp6.
/// The fallback of ``SocketDiagnostics``: for a kernel without `inet_diag` or `udp_diag`, and
/// for a program in a network namespace voipd may not enter (/proc/PID/net shows the tables
/// of PID's namespace, while a diagnostics socket sees only its own).
public enum ProcNetSocketTable {
    /// The table of one family and transport as seen by `pid`'s network namespace, a line at
    /// a time to `body` (false stops early). At most `limit` lines are read: past it the
    /// read stops and `EOVERFLOW` is thrown.
    public static func read(pid: pid_t, transport: NetworkSocket.Transport, family: IPAddress.Family, limit: Int,
                            _ body: (NetworkSocket) throws -> Bool) throws {
        let name = transport.rawValue + (family == .ipv6 ? "6" : "")
        let file = try openFile("/proc/\(pid)/net/\(name)", flags: O_RDONLY)
        var pending: [UInt8] = []
        var lines = 0
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = try chunk.withUnsafeMutableBytes { raw in
                try valueOrErrno("read(/proc/\(pid)/net/\(name))") { Glibc.read(file.rawValue, raw.baseAddress, raw.count) }
            }
            if count == 0 { return }
            pending += chunk[..<count]
            var start = pending.startIndex
            while let newline = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                defer { start = newline + 1 }
                lines += 1
                // The first line names the columns.
                if lines == 1 { continue }
                if lines > limit + 1 { throw Errno(EOVERFLOW, call: "/proc/\(pid)/net/\(name): more than \(limit) sockets") }
                if let socket = parse(Substring(decoding: pending[start..<newline], as: UTF8.self), transport: transport) {
                    guard try body(socket) else { return }
                }
            }
            pending.removeSubrange(..<start)
            // No line of these tables comes near this; a longer one is not a table line.
            if pending.count > 4096 { throw Errno(EBADMSG, call: "/proc/\(pid)/net/\(name): a line longer than 4096 bytes") }
        }
    }

    /// The lines of one table for the sockets `inodes`, added to `found`, the table read
    /// again (`passes` times at most) while some are missing. The kernel prints these tables
    /// a page (about 30 lines) per `read`, and starts each `read` from a position counted in
    /// lines (UDP) or in lines of a hash bucket (TCP): a socket opened or closed elsewhere
    /// between two reads moves what that position points at, and a line is skipped or
    /// printed twice. On a busy machine (thousands of TCP sockets, hundreds of pages) that
    /// loses a socket often enough to matter; a line that is there is not skipped in every
    /// pass. A socket in no table (closed since, or never bound) costs the passes.
    public static func find(_ inodes: Set<UInt64>, pid: pid_t, transport: NetworkSocket.Transport, family: IPAddress.Family, limit: Int,
                            passes: Int = 3, into found: inout [UInt64: NetworkSocket]) throws {
        var missing = inodes.filter { found[$0] == nil }
        for _ in 0..<passes where !missing.isEmpty {
            try read(pid: pid, transport: transport, family: family, limit: limit) { socket in
                if missing.remove(socket.inode) != nil { found[socket.inode] = socket }
                return !missing.isEmpty
            }
        }
    }

    /// One line of a table: `sl local rem st tx_queue:rx_queue tr:tm->when retrnsmt uid
    /// timeout inode …`. Addresses are hexadecimal 32-bit words in the host's byte order,
    /// ports hexadecimal numbers. Nil for a line that does not have this shape.
    public static func parse(_ line: Substring, transport: NetworkSocket.Transport) -> NetworkSocket? {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 10, let local = endpoint(fields[1]), let peer = endpoint(fields[2]),
              let stateValue = UInt8(fields[3], radix: 16), let state = NetworkSocket.State(rawValue: stateValue),
              let colon = fields[4].firstIndex(of: ":"),
              let sendQueue = UInt32(fields[4][..<colon], radix: 16),
              let receiveQueue = UInt32(fields[4][fields[4].index(after: colon)...], radix: 16),
              let inode = UInt64(fields[9]) else { return nil }
        let hasPeer = !(peer.address.isUnspecified && peer.port == 0)
        return NetworkSocket(transport: transport, state: state, local: local, remote: hasPeer ? peer : nil,
                             receiveQueue: receiveQueue, sendQueue: sendQueue, inode: inode)
    }

    private static func endpoint(_ field: Substring) -> InetEndpoint? {
        guard let colon = field.firstIndex(of: ":"), let port = UInt16(field[field.index(after: colon)...], radix: 16) else { return nil }
        let hex = field[..<colon]
        guard hex.count == 8 || hex.count == 32 else { return nil }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let end = hex.index(index, offsetBy: 8)
            guard let word = UInt32(hex[index..<end], radix: 16) else { return nil }
            // The kernel printed each 32-bit word of the network-order address as a number
            // of this host: its bytes in memory are the address's bytes again.
            bytes += withUnsafeBytes(of: word) { Array($0) }
            index = end
        }
        return IPAddress(bytes: bytes).map { InetEndpoint(address: $0, port: port) }
    }
}
