import Glibc
import VoipdSystem

/// How many TCP sockets `pid` has in the LISTEN state: its descriptors' socket inodes
/// (/proc/PID/fd) found in /proc/net/tcp or tcp6 with state 0A. The softphone must have
/// none: a call can reach it only over the connection it opened.
func listeningTCPSocketCount(of pid: pid_t) -> Int {
    var inodes = Set<String>()
    var link = [CChar](repeating: 0, count: 64)
    for fd in ProcFS.descriptors(of: pid) {
        let count = readlink("/proc/\(pid)/fd/\(fd)", &link, link.count - 1)
        let target = count > 0 ? String(decoding: link[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        if target.hasPrefix("socket:[") { inodes.insert(String(target.dropFirst(8).dropLast())) }
    }
    let tables = (ProcFS.read("/proc/net/tcp") ?? "") + (ProcFS.read("/proc/net/tcp6") ?? "")
    return tables.split(separator: "\n").filter { line in
        let fields = line.split(separator: " ")
        return fields.count > 9 && fields[3] == "0A" && inodes.contains(String(fields[9]))
    }.count
}
