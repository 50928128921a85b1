import Glibc

/// The processes of a program: a process and everything below it, or the members of a
/// cgroup.
public struct ProcessTree: Sendable, Equatable {
    /// The processes found, the root first, then level by level.
    public var processes: [pid_t]
    /// Whether there were more than the limit allowed: the rest were not looked at.
    public var truncated: Bool

    public init(processes: [pid_t], truncated: Bool) {
        self.processes = processes
        self.truncated = truncated
    }

    /// `root` and its descendants, at most `limit` of them. A process that left the tree
    /// (a daemon that double-forked, reparented to init or a subreaper other than voipd) is
    /// not found this way: give its cgroup instead. Children come from
    /// /proc/PID/task/TID/children when the kernel has it (`CONFIG_PROC_CHILDREN`), otherwise
    /// from the parent field of every process's /proc/PID/stat, read once for the whole tree.
    /// Throws `ESRCH` when `root` is gone.
    public static func below(_ root: pid_t, limit: Int) throws -> ProcessTree {
        guard access("/proc/\(root)", F_OK) == 0 else { throw Errno(ESRCH, call: "/proc/\(root)") }
        var children: (pid_t) -> [pid_t] = { childrenFromTasks(of: $0) ?? [] }
        if childrenFromTasks(of: root) == nil {
            let parents = parentTable()
            children = { parents[$0] ?? [] }
        }
        var tree = ProcessTree(processes: [root], truncated: false)
        var seen: Set<pid_t> = [root]
        var next = 0
        while next < tree.processes.count {
            for child in children(tree.processes[next]) where seen.insert(child).inserted {
                guard tree.processes.count < limit else {
                    tree.truncated = true
                    return tree
                }
                tree.processes.append(child)
            }
            next += 1
        }
        return tree
    }

    /// The processes of a cgroup (`cgroup.procs` in its directory, v2 or v1), at most `limit`. Unlike ``below(_:limit:)`` it finds daemons that left the process tree.
    public static func inCgroup(_ directory: String, limit: Int) throws -> ProcessTree {
        let file = try openFile(directory + "/cgroup.procs", flags: O_RDONLY)
        var tree = ProcessTree(processes: [], truncated: false)
        var text: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        // Seven bytes a pid at most: a limit's worth of lines, and one more to know there were more.
        let enough = (limit + 1) * 8
        while text.count < enough {
            let count = try chunk.withUnsafeMutableBytes { raw in
                try valueOrErrno("read(\(directory)/cgroup.procs)") { Glibc.read(file.rawValue, raw.baseAddress, raw.count) }
            }
            if count == 0 { break }
            text += chunk[..<count]
        }
        for line in text.split(separator: UInt8(ascii: "\n")) {
            guard let pid = pid_t(String(decoding: line, as: UTF8.self)) else { continue }
            guard tree.processes.count < limit else {
                tree.truncated = true
                break
            }
            tree.processes.append(pid)
        }
        return tree
    }

    /// Children of every thread of `pid`, or nil when the kernel has no children files.
    private static func childrenFromTasks(of pid: pid_t) -> [pid_t]? {
        var result: [pid_t] = []
        var sawFile = false
        for thread in numericEntries("/proc/\(pid)/task") {
            guard let text = ProcFS.read("/proc/\(pid)/task/\(thread)/children") else { continue }
            sawFile = true
            result += text.split(separator: " ").compactMap { pid_t($0.filter(\.isNumber)) }
        }
        return sawFile ? result : nil
    }

    /// Parent → children for every process on the machine, from /proc/PID/stat.
    private static func parentTable() -> [pid_t: [pid_t]] {
        var table: [pid_t: [pid_t]] = [:]
        for pid in numericEntries("/proc") {
            if let parent = ProcFS.parent(of: pid) { table[parent, default: []].append(pid) }
        }
        return table
    }

    /// The numeric names in a /proc directory (pids, thread ids).
    static func numericEntries(_ path: String) -> [pid_t] {
        // A directory that cannot be read (the process has ended) has none.
        let names = (try? DirectoryEntry.names(in: path)) ?? []
        return names.compactMap { name in
            guard !name.isEmpty, name.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
            return pid_t(name)
        }
    }
}
