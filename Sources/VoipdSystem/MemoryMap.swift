import Glibc

/// One mapping of a process's address space, a line of `/proc/PID/maps`.
public struct MemoryRegion: Sendable, Equatable {
    /// The first address and the one after the last.
    public var start: UInt
    public var end: UInt
    public var isReadable: Bool
    public var isWritable: Bool
    public var isExecutable: Bool
    /// `MAP_SHARED` (`s`) rather than private copy-on-write (`p`).
    public var isShared: Bool
    /// The inode of the file mapped; 0 for anonymous memory.
    public var inode: UInt64
    /// The file's path, a pseudo-path (`[heap]`, `[stack]`, `[vdso]`, `[anon:NAME]`), or ""
    /// for anonymous memory.
    public var path: String

    public init(start: UInt, end: UInt, isReadable: Bool, isWritable: Bool, isExecutable: Bool, isShared: Bool,
                inode: UInt64, path: String) {
        self.start = start
        self.end = end
        self.isReadable = isReadable
        self.isWritable = isWritable
        self.isExecutable = isExecutable
        self.isShared = isShared
        self.inode = inode
        self.path = path
    }

    public var size: UInt { end - start }

    /// The kernel's own pages mapped into every process (`[vvar]`, `[vvar_vclock]`, `[vdso]`,
    /// `[vsyscall]`, `[uprobes]`): no advice applies to them (`EINVAL`, `EFAULT`).
    public var isKernelMapping: Bool {
        ["[vvar]", "[vvar_vclock]", "[vdso]", "[vsyscall]", "[uprobes]"].contains(path)
    }

    /// Anonymous memory: the heap, stacks, `mmap(MAP_ANONYMOUS)`. Private anonymous memory
    /// can only go to swap.
    public var isAnonymous: Bool { inode == 0 && !isKernelMapping }

    /// Whether the region can have pages to page out: not the kernel's, and accessible at
    /// all (a `---p` guard region never has a page).
    public var mayHavePages: Bool { !isKernelMapping && (isReadable || isWritable || isExecutable) }
}

/// The mappings of a process (`/proc/PID/maps`).
public enum MemoryMap {
    /// Reads `/proc/PID/maps`. Throws `ENOENT` (or `ESRCH`) when the process is gone,
    /// `EACCES` without ptrace-read rights over it. Its size is bounded by the kernel
    /// (`vm.max_map_count` mappings, 65530 by default).
    public static func regions(of pid: pid_t) throws -> [MemoryRegion] {
        try parse(ProcFS.contents(of: "/proc/\(pid)/maps", limit: 64 << 20))
    }

    /// The regions of a `maps` text; a line that does not parse is left out.
    public static func parse(_ text: String) -> [MemoryRegion] {
        text.split(separator: "\n").compactMap(region)
    }

    /// `START-END PERMS OFFSET DEV INODE [PATH]`; the path may hold spaces.
    private static func region(_ line: Substring) -> MemoryRegion? {
        var rest = line[...]
        func word() -> Substring? {
            rest = rest.drop { $0 == " " }
            guard !rest.isEmpty else { return nil }
            let end = rest.firstIndex(of: " ") ?? rest.endIndex
            defer { rest = rest[end...] }
            return rest[..<end]
        }
        guard let range = word(), let permissions = word(), permissions.count >= 4, word() != nil, word() != nil,
              let inodeText = word(), let inode = UInt64(inodeText) else { return nil }
        let bounds = range.split(separator: "-")
        guard bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16), end > start else {
            return nil
        }
        let flags = Array(permissions)
        return MemoryRegion(start: start, end: end, isReadable: flags[0] == "r", isWritable: flags[1] == "w",
                            isExecutable: flags[2] == "x", isShared: flags[3] == "s", inode: inode,
                            path: String(rest.drop { $0 == " " }))
    }
}
