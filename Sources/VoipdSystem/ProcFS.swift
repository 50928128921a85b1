import Glibc

/// Reads of /proc: what the kernel says about a process.
public enum ProcFS {
    /// The whole content of a small file, or nil if it cannot be read (the process is gone).
    public static func read(_ path: String) -> String? {
        do {
            let file = try openFile(path, flags: O_RDONLY)
            return String(decoding: try file.readToEnd(limit: 16 << 20), as: UTF8.self)
        } catch {
            return nil
        }
    }

    /// The fields of /proc/PID/stat after the command name (which may contain spaces):
    /// index 0 is the state.
    static func statFields(_ pid: pid_t) -> [Substring]? {
        guard let text = read("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }

    /// The scheduler state letter: "R", "S", "D", "T" (stopped), "t", "Z", …
    public static func state(of pid: pid_t) -> Character? {
        statFields(pid)?.first?.first
    }

    /// The parent's pid.
    public static func parent(of pid: pid_t) -> pid_t? {
        guard let fields = statFields(pid), fields.count > 1 else { return nil }
        return pid_t(fields[1])
    }

    /// The process group's id (field 5 of /proc/PID/stat).
    public static func processGroup(of pid: pid_t) -> pid_t? {
        guard let fields = statFields(pid), fields.count > 2 else { return nil }
        return pid_t(fields[2])
    }

    /// When the process started, in clock ticks after boot (field 22 of /proc/PID/stat):
    /// with the pid, it names one process for the life of the system.
    public static func startTime(of pid: pid_t) -> UInt64? {
        guard let fields = statFields(pid), fields.count > 19 else { return nil }
        return UInt64(fields[19])
    }

    /// The real uid (the first of the `Uid:` line of /proc/PID/status).
    public static func realUserID(of pid: pid_t) -> uid_t? {
        guard let status = read("/proc/\(pid)/status") else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("Uid:") {
            return line.dropFirst(4).split(whereSeparator: { $0 == "\t" || $0 == " " }).first.flatMap { uid_t($0) }
        }
        return nil
    }

    /// This boot's random id (/proc/sys/kernel/random/boot_id): pids and start times mean
    /// nothing after a reboot.
    public static var bootID: String? {
        read("/proc/sys/kernel/random/boot_id").map { String($0.prefix { !$0.isWhitespace }) }
    }

    /// Resident memory in bytes (/proc/PID/statm).
    public static func residentBytes(of pid: pid_t) -> UInt64? {
        guard let text = read("/proc/\(pid)/statm") else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = UInt64(fields[1]) else { return nil }
        return pages * UInt64(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// The descriptor numbers a process has open (/proc/PID/fd).
    public static func descriptors(of pid: pid_t) -> [CInt] {
        let names = (try? DirectoryEntry.names(in: "/proc/\(pid)/fd")) ?? []
        return names.compactMap { CInt($0) }.sorted()
    }

    /// Whether `pid` is `ancestor` or descends from it.
    public static func isDescendant(_ pid: pid_t, of ancestor: pid_t) -> Bool {
        var current = pid
        for _ in 0..<64 {
            if current == ancestor { return true }
            guard current > 1, let parent = parent(of: current) else { return false }
            current = parent
        }
        return false
    }
}
