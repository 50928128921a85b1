import Glibc
import VoipdSystem

/// A TCP socket of a process, as /proc/net/tcp and tcp6 describe it.
struct ProcessTCPSocket: Equatable {
    let localPort: UInt16
    let remotePort: UInt16
    /// The kernel's TCP state: 0x01 established, 0x0A listening, …
    let state: UInt8

    var isListening: Bool { state == 0x0A }
}

/// The TCP sockets `pid` has open: its descriptors' socket inodes (/proc/PID/fd) looked up
/// in /proc/net/tcp and tcp6. How a test sees that the softphone listens on no port and
/// which connection it uses.
func tcpSockets(of pid: pid_t) -> [ProcessTCPSocket] {
    internetSockets(of: pid, in: ["/proc/net/tcp", "/proc/net/tcp6"])
}

/// The UDP sockets `pid` has open, from /proc/net/udp and udp6: `state` is 0x01 for a
/// connected one, 0x07 for one that receives from anyone.
func udpSockets(of pid: pid_t) -> [ProcessTCPSocket] {
    internetSockets(of: pid, in: ["/proc/net/udp", "/proc/net/udp6"])
}

private func internetSockets(of pid: pid_t, in tables: [String]) -> [ProcessTCPSocket] {
    var inodes = Set<Substring>()
    var target = [CChar](repeating: 0, count: 256)
    for fd in ProcFS.descriptors(of: pid) {
        let count = readlink("/proc/\(pid)/fd/\(fd)", &target, target.count - 1)
        guard count > 0 else { continue }
        let link = String(decoding: target[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if link.hasPrefix("socket:[") { inodes.insert(Substring(link.dropFirst(8).dropLast())) }
    }
    var sockets: [ProcessTCPSocket] = []
    // The kernel writes these tables a page at a time, going on from a position that moves
    // when other sockets come and go between two reads: a line can come twice. A socket's
    // inode is its own, so it is counted once.
    var seen = Set<Substring>()
    for table in tables {
        for line in (ProcFS.read(table) ?? "").split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, inodes.contains(fields[9]), seen.insert(fields[9]).inserted,
                  let local = fields[1].split(separator: ":").last.flatMap({ UInt16($0, radix: 16) }),
                  let remote = fields[2].split(separator: ":").last.flatMap({ UInt16($0, radix: 16) }),
                  let state = UInt8(fields[3], radix: 16) else { continue }
            sockets.append(ProcessTCPSocket(localPort: local, remotePort: remote, state: state))
        }
    }
    return sockets
}
