import CVoipd
import Glibc

/// A descriptor of a process: where a socket can be taken from with `pidfd_getfd`.
public struct DescriptorLocation: Hashable, Sendable, CustomStringConvertible {
    public var pid: pid_t
    public var descriptor: CInt

    public init(pid: pid_t, descriptor: CInt) {
        self.pid = pid
        self.descriptor = descriptor
    }

    public var description: String { "pid \(pid) fd \(descriptor)" }
}

/// The socket descriptors of a process, from /proc/PID/fd, where each socket is a link to
/// `socket:[INODE]`. Reading it needs ptrace read access to the process (same user, or
/// `CAP_SYS_PTRACE`); Yama does not restrict reads.
public enum SocketDescriptorScan {
    /// One socket descriptor.
    public struct Entry: Sendable, Equatable {
        public var location: DescriptorLocation
        public var inode: UInt64
        /// The kernel's name of the socket's protocol (the `system.sockprotoname` attribute of
        /// /proc/PID/fd/N: `TCP`, `TCPv6`, `UDP`, `UDPv6`, `UNIX-STREAM`, `NETLINK`, …); nil
        /// if it could not be read.
        public var protocolName: String?
    }

    public struct Result: Sendable, Equatable {
        /// The sockets found, by ascending descriptor number.
        public var sockets: [Entry]
        /// How many descriptors were looked at (sockets or not).
        public var examined: Int
        /// Whether the scan stopped at the limit with descriptors left unread.
        public var truncated: Bool

    }

    /// The socket descriptors of `pid`, looking at no more than `limit` descriptors: the
    /// kernel lists them in ascending order, so the lowest numbers, which a program opens
    /// first, are the ones seen. Throws the errno of opening /proc/PID/fd (`ENOENT` when the
    /// process is gone, `EACCES` without ptrace read access). Two small system calls a
    /// socket: the link (its inode) and its protocol's name, which tells which of the
    /// kernel's tables can hold it, so that Unix and netlink sockets cost no table reads.
    public static func scan(_ pid: pid_t, limit: Int) throws -> Result {
        guard let directory = opendir("/proc/\(pid)/fd") else { throw Errno.current("opendir(/proc/\(pid)/fd)") }
        defer { closedir(directory) }
        let directoryFD = dirfd(directory)
        var result = Result(sockets: [], examined: 0, truncated: false)
        var target = [CChar](repeating: 0, count: 64)
        var protocolName = [CChar](repeating: 0, count: 32)
        while let entry = readdir(directory) {
            let name = DirectoryEntry.name(entry)
            guard let descriptor = CInt(name) else { continue }
            guard result.examined < limit else {
                result.truncated = true
                break
            }
            result.examined += 1
            // A descriptor closed since the directory was read has no link any more: skip it.
            let count = readlinkat(directoryFD, name, &target, target.count)
            guard count > 0, let inode = socketInode(target[..<count]) else { continue }
            let length = getxattr("/proc/\(pid)/fd/\(descriptor)", "system.sockprotoname", &protocolName, protocolName.count)
            let kind = length > 0 ? String(decoding: protocolName[..<length].prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
            result.sockets.append(Entry(location: DescriptorLocation(pid: pid, descriptor: descriptor), inode: inode, protocolName: kind))
        }
        return result
    }

    /// The inode in a link `socket:[INODE]`; nil for any other link.
    static func socketInode(_ link: ArraySlice<CChar>) -> UInt64? {
        let text = String(decoding: link.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard text.hasPrefix("socket:["), text.hasSuffix("]") else { return nil }
        return UInt64(text.dropFirst(8).dropLast())
    }
}
