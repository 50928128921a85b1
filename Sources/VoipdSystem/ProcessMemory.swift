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
    public static func parse(_ text: String) -> ProcessMemory { readFields(text, fields, into: ProcessMemory()) }

    public static func += (total: inout ProcessMemory, part: ProcessMemory) { addFields(fields, of: part, to: &total) }

    /// `smaps_rollup`'s name for each field.
    private static var fields: [(name: String, field: WritableKeyPath<ProcessMemory, UInt64>)] {
        [("Rss", \.resident), ("Pss", \.proportional), ("Private_Dirty", \.privateDirty), ("Private_Clean", \.privateClean),
         ("Shared_Dirty", \.sharedDirty), ("Shared_Clean", \.sharedClean), ("Anonymous", \.anonymous), ("Swap", \.swapped),
         ("Locked", \.locked)]
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
        readFields(try ProcFS.contents(of: "/proc/\(pid)/status", limit: 64 * 1024), fields, into: MemoryCounters())
    }

    /// The counters of several processes added up.
    public static func += (total: inout MemoryCounters, part: MemoryCounters) { addFields(fields, of: part, to: &total) }

    /// `/proc/PID/status`'s name for each field.
    private static var fields: [(name: String, field: WritableKeyPath<MemoryCounters, UInt64>)] {
        [("VmRSS", \.resident), ("RssAnon", \.residentAnonymous), ("RssFile", \.residentFile), ("RssShmem", \.residentShared),
         ("VmSwap", \.swapped), ("VmLck", \.locked)]
    }
}

/// `zero` with its fields set from a /proc file's `Name:   1234 kB` lines, one field a name;
/// a field whose line the kernel does not have stays zero.
private func readFields<Record>(_ text: String, _ fields: [(name: String, field: WritableKeyPath<Record, UInt64>)], into zero: Record) -> Record {
    let values = kilobyteFields(text)
    var record = zero
    for (name, field) in fields { record[keyPath: field] = values[name] ?? 0 }
    return record
}

/// Adds each of `fields` of `part` to the same field of `total`.
private func addFields<Record>(_ fields: [(name: String, field: WritableKeyPath<Record, UInt64>)], of part: Record, to total: inout Record) {
    for (_, field) in fields { total[keyPath: field] += part[keyPath: field] }
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
