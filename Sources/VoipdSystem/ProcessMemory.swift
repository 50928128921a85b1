import Glibc

/// What a process's memory is made of, in bytes, from `/proc/PID/smaps_rollup`: the sums
/// over all its mappings of what `/proc/PID/smaps` says of each. The kernel walks the page
/// tables to make it, so reading it costs time in proportion to the memory mapped (see
/// docs/BENCHMARKS.md, "The hibernation benchmark"); ``MemoryCounters`` is the cheap reading.
public struct ProcessMemory: Sendable, Equatable {
    /// Resident pages (`Rss`), shared ones included.
    public var resident: UInt64
    /// Resident pages, each shared page divided among the processes that map it (`Pss`).
    public var proportional: UInt64
    /// Pages only this process maps, modified since they were read or made (`Private_Dirty`):
    /// the memory that must be written somewhere before its frames can be given back.
    public var privateDirty: UInt64
    /// Pages only this process maps, unmodified (`Private_Clean`): dropped and read again.
    public var privateClean: UInt64
    /// Pages other processes map too (`Shared_Dirty`, `Shared_Clean`).
    public var sharedDirty: UInt64
    public var sharedClean: UInt64
    /// Resident anonymous pages (`Anonymous`): heap, stacks, private copies of file pages.
    public var anonymous: UInt64
    /// Pages of this process in swap (`Swap`), zram included.
    public var swapped: UInt64
    /// Pages locked in memory (`Locked`, by `mlock` or `MAP_LOCKED`): never paged out.
    public var locked: UInt64

    public init(resident: UInt64 = 0, proportional: UInt64 = 0, privateDirty: UInt64 = 0, privateClean: UInt64 = 0,
                sharedDirty: UInt64 = 0, sharedClean: UInt64 = 0, anonymous: UInt64 = 0, swapped: UInt64 = 0, locked: UInt64 = 0) {
        self.resident = resident
        self.proportional = proportional
        self.privateDirty = privateDirty
        self.privateClean = privateClean
        self.sharedDirty = sharedDirty
        self.sharedClean = sharedClean
        self.anonymous = anonymous
        self.swapped = swapped
        self.locked = locked
    }

    /// Resident pages backed by a file (and shared memory, which the kernel keeps as files):
    /// what paging out can drop even without swap, as far as no other process maps them.
    public var fileBacked: UInt64 { resident > anonymous ? resident - anonymous : 0 }

    /// What seed 004 calls dirty memory, the measure of hibernation's limit: pages that had
    /// to be (`swapped`) or must be (`privateDirty`) written somewhere for the process to
    /// give their frames back. Clean and shared pages cost nothing to drop.
    public var dirty: UInt64 { privateDirty + swapped }

    /// Reads `/proc/PID/smaps_rollup`. Throws `ENOENT` (or `ESRCH`) when the process is
    /// gone, `EACCES` without ptrace-read rights over it.
    public static func of(_ pid: pid_t) throws -> ProcessMemory {
        try parse(ProcFS.contents(of: "/proc/\(pid)/smaps_rollup", limit: 64 * 1024))
    }

    /// The sum over several processes (an app and its helpers: ``ProcessTree/below(_:limit:)``
    /// or ``ProcessTree/inCgroup(_:limit:)``), those that have ended left out. Only ``proportional`` adds up to the memory they cost together; a page two of
    /// them share counts twice in ``resident`` and the shared fields.
    public static func of(processes: [pid_t]) throws -> ProcessMemory {
        var total = ProcessMemory()
        for pid in processes {
            do {
                total += try of(pid)
            } catch Errno.noSuchFileOrDirectory, Errno.noSuchProcess {
                continue
            }
        }
        return total
    }

    /// The fields of an `smaps_rollup` text; those the kernel does not have are zero.
    public static func parse(_ text: String) -> ProcessMemory {
        let fields = kilobyteFields(text)
        return ProcessMemory(resident: fields["Rss"] ?? 0, proportional: fields["Pss"] ?? 0,
                             privateDirty: fields["Private_Dirty"] ?? 0, privateClean: fields["Private_Clean"] ?? 0,
                             sharedDirty: fields["Shared_Dirty"] ?? 0, sharedClean: fields["Shared_Clean"] ?? 0,
                             anonymous: fields["Anonymous"] ?? 0, swapped: fields["Swap"] ?? 0, locked: fields["Locked"] ?? 0)
    }

    public static func += (total: inout ProcessMemory, part: ProcessMemory) {
        total.resident += part.resident
        total.proportional += part.proportional
        total.privateDirty += part.privateDirty
        total.privateClean += part.privateClean
        total.sharedDirty += part.sharedDirty
        total.sharedClean += part.sharedClean
        total.anonymous += part.anonymous
        total.swapped += part.swapped
        total.locked += part.locked
    }
}

/// A process's memory counters from `/proc/PID/status`, in bytes: kept by the kernel as the
/// process runs, so reading them costs the same for any size (unlike ``ProcessMemory``).
/// What `voipctl status` can show for every app.
public struct MemoryCounters: Sendable, Equatable {
    /// `VmRSS`: resident pages, the sum of the three below.
    public var resident: UInt64
    /// `RssAnon`, `RssFile`, `RssShmem`.
    public var residentAnonymous: UInt64
    public var residentFile: UInt64
    public var residentShared: UInt64
    /// `VmSwap`: anonymous pages in swap.
    public var swapped: UInt64
    /// `VmLck`: locked pages.
    public var locked: UInt64

    public init(resident: UInt64 = 0, residentAnonymous: UInt64 = 0, residentFile: UInt64 = 0, residentShared: UInt64 = 0,
                swapped: UInt64 = 0, locked: UInt64 = 0) {
        self.resident = resident
        self.residentAnonymous = residentAnonymous
        self.residentFile = residentFile
        self.residentShared = residentShared
        self.swapped = swapped
        self.locked = locked
    }

    /// Reads `/proc/PID/status`. Throws `ENOENT` (or `ESRCH`) when the process is gone. A
    /// kernel thread or a zombie has none of the fields: all zero.
    public static func of(_ pid: pid_t) throws -> MemoryCounters {
        let fields = kilobyteFields(try ProcFS.contents(of: "/proc/\(pid)/status", limit: 64 * 1024))
        return MemoryCounters(resident: fields["VmRSS"] ?? 0, residentAnonymous: fields["RssAnon"] ?? 0,
                              residentFile: fields["RssFile"] ?? 0, residentShared: fields["RssShmem"] ?? 0,
                              swapped: fields["VmSwap"] ?? 0, locked: fields["VmLck"] ?? 0)
    }

    /// The counters of several processes added up.
    public static func += (total: inout MemoryCounters, part: MemoryCounters) {
        total.resident += part.resident
        total.residentAnonymous += part.residentAnonymous
        total.residentFile += part.residentFile
        total.residentShared += part.residentShared
        total.swapped += part.swapped
        total.locked += part.locked
    }
}

/// The `Name:   1234 kB` lines of a /proc file, as name → bytes; other lines are left out.
func kilobyteFields(_ text: String) -> [String: UInt64] {
    var fields: [String: UInt64] = [:]
    for line in text.split(separator: "\n") {
        guard let colon = line.firstIndex(of: ":") else { continue }
        let words = line[line.index(after: colon)...].split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard words.count == 2, words[1] == "kB", let kilobytes = UInt64(words[0]) else { continue }
        fields[String(line[..<colon])] = kilobytes * 1024
    }
    return fields
}

extension ProcFS {
    /// The whole content of a /proc or /sys file, or the errno of the failure: `ENOENT` for
    /// a process that is gone, `EACCES` for one that is not ours to read. More than `limit`
    /// bytes is `EFBIG`.
    public static func contents(of path: String, limit: Int) throws -> String {
        let file = try openFile(path, flags: O_RDONLY)
        do {
            return String(decoding: try file.readToEnd(limit: limit), as: UTF8.self)
        } catch {
            throw Errno(error.rawValue, call: "read(\(path))")
        }
    }
}
