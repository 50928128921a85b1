import Glibc

/// What the processes of a cgroup hold in memory, in bytes, from the `memory.stat` of its
/// directory: cgroup v2's unified hierarchy, or v1's memory controller (a hierarchy of its
/// own there, apart from v1's freezer). Unlike ``ProcessMemory`` it counts what the
/// processes of the group allocated whatever they are now (children that left, pages of
/// files they read) and needs no page walk: the kernel keeps the counters.
public struct CgroupMemory: Sendable, Equatable {
    public enum Hierarchy: Sendable, Equatable {
        /// cgroup v2: `anon`, `file`, `file_dirty`, `shmem`; swap in `memory.swap.current`.
        case unified
        /// cgroup v1's memory controller: `total_rss`, `total_cache`, `total_dirty`,
        /// `total_shmem`, `total_swap` (the `total_` fields count the descendants too).
        case memoryController
    }

    public var hierarchy: Hierarchy
    /// Anonymous memory charged to the group, resident (v2 `anon`; v1 `total_rss`).
    public var anonymous: UInt64
    /// Page cache charged to the group, shared memory included (v2 `file`; v1 `total_cache`).
    public var file: UInt64
    /// Page cache waiting to be written back (v2 `file_dirty`; v1 `total_dirty`).
    public var fileDirty: UInt64
    /// Shared memory (tmpfs, shared anonymous mappings; v2 `shmem`; v1 `total_shmem`).
    public var shared: UInt64
    /// Memory of the group in swap: v2 `memory.swap.current`, v1 `total_swap`; nil when
    /// the kernel does not account swap per group (no `memory.swap.current`, or v1 without
    /// `swapaccount`).
    public var swapped: UInt64?

    public init(hierarchy: Hierarchy, anonymous: UInt64, file: UInt64, fileDirty: UInt64, shared: UInt64, swapped: UInt64?) {
        self.hierarchy = hierarchy
        self.anonymous = anonymous
        self.file = file
        self.fileDirty = fileDirty
        self.shared = shared
        self.swapped = swapped
    }

    /// The group's dirty memory in seed 004's sense, as ``ProcessMemory/dirty`` is for a
    /// process: anonymous and shared memory, dirty page cache, and what is in swap already.
    public var dirty: UInt64 { anonymous + shared + fileDirty + (swapped ?? 0) }

    /// Reads `DIRECTORY/memory.stat` (and, for v2, `DIRECTORY/memory.swap.current`).
    /// `ENOENT` when the directory has no memory controller's files (a v2 group whose parent
    /// does not enable `memory` in `cgroup.subtree_control`, or a v1 group of another
    /// controller); `EINVAL` when the file is neither kind.
    public static func read(directory: String) throws -> CgroupMemory {
        let stat = try ProcFS.contents(of: directory + "/memory.stat", limit: 64 * 1024)
        var swapCurrent: UInt64?
        if access(directory + "/memory.swap.current", F_OK) == 0 {
            let text = try ProcFS.contents(of: directory + "/memory.swap.current", limit: 64)
            swapCurrent = UInt64(text.filter { !$0.isWhitespace })
        }
        guard let memory = parse(stat: stat, swapCurrent: swapCurrent) else {
            throw Errno(EINVAL, call: "\(directory)/memory.stat: neither cgroup v2 nor v1's memory controller")
        }
        return memory
    }

    /// The fields of a `memory.stat` text (`name value` lines, bytes); nil if it is neither
    /// kind. `swapCurrent`: v2's `memory.swap.current`, if there is one.
    public static func parse(stat text: String, swapCurrent: UInt64? = nil) -> CgroupMemory? {
        var fields: [Substring: UInt64] = [:]
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count == 2, let value = UInt64(words[1]) { fields[words[0]] = value }
        }
        if let anonymous = fields["anon"] {
            return CgroupMemory(hierarchy: .unified, anonymous: anonymous, file: fields["file"] ?? 0,
                                fileDirty: fields["file_dirty"] ?? 0, shared: fields["shmem"] ?? 0, swapped: swapCurrent)
        }
        if let anonymous = fields["total_rss"] {
            // v1 counts shared memory in the cache, not in rss; v2 in file, not in anon.
            return CgroupMemory(hierarchy: .memoryController, anonymous: anonymous, file: fields["total_cache"] ?? 0,
                                fileDirty: fields["total_dirty"] ?? 0, shared: fields["total_shmem"] ?? 0,
                                swapped: fields["total_swap"])
        }
        return nil
    }
}
