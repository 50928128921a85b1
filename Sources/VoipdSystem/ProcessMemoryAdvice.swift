import CVoipd
import Glibc

/// Advice about another process's memory that `process_madvise(2)` gives the kernel.
/// The caller needs `CAP_SYS_NICE` and ptrace-read rights over the process (root has both).
public enum MemoryAdvice: Sendable, Equatable, CustomStringConvertible {
    /// `MADV_PAGEOUT` (Linux 5.4): reclaim the pages now, as memory pressure would. What goes:
    /// private anonymous pages, written to swap (zram or a swap file or partition), only if
    /// there is swap; pages of files that no other process maps (clean ones are dropped, to
    /// be read again from the file). What stays: without swap, all anonymous memory; any page
    /// another process also maps (shared libraries' code, pages shared with a parent since
    /// `fork`); pages of a shared file mapping when the caller could not open the file for
    /// writing (root can). The kernel refuses locked regions (`mlock`, `MAP_LOCKED`),
    /// hugetlbfs and device (PFN) mappings with `EINVAL`: see ``ProcessMemoryAdvice/refused``.
    case pageOut
    /// `MADV_COLD`: the pages move to the inactive lists, first to go under memory pressure.
    case cold
    /// `MADV_WILLNEED`: read the pages back ahead of use (from swap, or the files' read-ahead).
    /// With zram, the caller decompresses them itself before the call returns.
    case willNeed

    var rawValue: CInt {
        switch self {
        case .pageOut: return voipd_MADV_PAGEOUT
        case .cold: return voipd_MADV_COLD
        case .willNeed: return voipd_MADV_WILLNEED
        }
    }

    public var description: String {
        switch self {
        case .pageOut: return "MADV_PAGEOUT"
        case .cold: return "MADV_COLD"
        case .willNeed: return "MADV_WILLNEED"
        }
    }
}

/// A range of addresses the kernel would not take the advice for, and its errno: `EINVAL`
/// for a locked, hugetlbfs or device mapping, `ENOMEM` for a range no longer mapped.
public struct RefusedRange: Sendable, Equatable {
    public var start: UInt
    public var length: UInt
    public var error: Errno
}

/// One piece of advice (``MemoryAdvice``) for ranges of another process's memory, given
/// with `process_madvise` in calls of at most `IOV_MAX` ranges, in as many steps as the
/// caller likes: paging out 100 MB into zram takes a few hundred milliseconds of the
/// caller's own time (docs/BENCHMARKS.md), which a one-thread daemon gives in slices between
/// its events with ``perform(on:upTo:)``.
///
/// A range the kernel refuses is recorded in ``refused`` and passed over; the kernel's
/// partial progress (it stops at the first range it refuses and returns what it advised
/// before it) is taken into account, and `EINTR` is retried. The advice applies to the
/// mappings as they were read: a region unmapped since is refused with `ENOMEM`, one mapped
/// since is not advised. Stop the process first (SIGSTOP or the freezer) to keep it still.
public struct ProcessMemoryAdvice: Sendable {
    public let advice: MemoryAdvice
    /// The ranges still to advise, in address order, and how far into the first one the
    /// advice has gone.
    private var ranges: [(start: UInt, length: UInt)]
    private var next = 0
    private var offset: UInt = 0
    /// Bytes the kernel took the advice for. For ``MemoryAdvice/pageOut`` that is not what
    /// it freed: pages absent or shared are passed over silently (measure with
    /// ``ProcessMemory`` before and after).
    public private(set) var advisedBytes: UInt64 = 0
    /// What the kernel refused, range by range.
    public private(set) var refused: [RefusedRange] = []
    /// `process_madvise` calls made so far.
    public private(set) var calls = 0

    /// Advice for every region that may have pages: not the kernel's own mappings, not
    /// inaccessible guard regions (``MemoryRegion/mayHavePages``).
    public init(_ advice: MemoryAdvice, regions: [MemoryRegion]) {
        self.advice = advice
        ranges = regions.filter(\.mayHavePages).map { ($0.start, $0.size) }
    }

    /// Whether every range has been advised or refused.
    public var isFinished: Bool { next == ranges.count }

    /// Bytes not yet advised nor refused.
    public var remainingBytes: UInt64 {
        guard !isFinished else { return 0 }
        return ranges[next...].reduce(UInt64(0)) { $0 + UInt64($1.length) } - UInt64(offset)
    }

    /// Gives the advice for up to `budget` more bytes (rounded down to whole pages, at
    /// least one) and returns the bytes advised in this step. Throws the errno that concerns
    /// the whole call: `ESRCH` when the process has ended, `EPERM` without `CAP_SYS_NICE` or
    /// ptrace rights, `ENOSYS` on a kernel before 5.10; what is advised until then is counted.
    @discardableResult
    public mutating func perform(on process: borrowing PidFd, upTo budget: UInt64 = .max) throws -> UInt64 {
        let pageSize = UInt(sysconf(Int32(_SC_PAGESIZE)))
        let maximumRanges = max(Int(sysconf(Int32(_SC_IOV_MAX))), 1)
        // The kernel caps one call's total at MAX_RW_COUNT (2 GiB less a page) and would
        // silently advise less; staying under it keeps each call's answer exact.
        let callLimit: UInt = 1 << 30
        var left = UInt(min(budget, UInt64(UInt.max)))
        left = max(left / pageSize * pageSize, pageSize)
        var advised: UInt64 = 0
        var batch: [iovec] = []
        batch.reserveCapacity(min(maximumRanges, ranges.count - next))
        while !isFinished && left > 0 {
            batch.removeAll(keepingCapacity: true)
            var total: UInt = 0
            var index = next
            var start = offset
            while index < ranges.count && batch.count < maximumRanges && total < min(left, callLimit) {
                let length = min(ranges[index].length - start, min(left, callLimit) - total)
                batch.append(iovec(iov_base: UnsafeMutableRawPointer(bitPattern: ranges[index].start + start), iov_len: Int(length)))
                total += length
                start = 0
                index += 1
            }
            calls += 1
            let result = batch.withUnsafeBufferPointer {
                voipd_process_madvise(process.descriptor.rawValue, $0.baseAddress, $0.count, advice.rawValue, 0)
            }
            if result > 0 {
                consume(UInt(result))
                advised += UInt64(result)
                left -= min(left, UInt(result))
                continue
            }
            let error = result == 0 ? EINVAL : errno
            switch error {
            case EINTR:
                continue
            case ESRCH, EPERM, ENOSYS:
                advisedBytes += advised
                throw Errno(error, call: "process_madvise(\(process.pid), \(advice))")
            default:
                // The first range of the call is the one refused: nothing before it was advised.
                let range = ranges[next]
                refused.append(RefusedRange(start: range.start + offset, length: range.length - offset,
                                            error: Errno(error, call: "process_madvise(\(process.pid), \(advice))")))
                next += 1
                offset = 0
            }
        }
        advisedBytes += advised
        return advised
    }

    /// Moves past `count` advised bytes.
    private mutating func consume(_ count: UInt) {
        var count = count
        while count > 0 && next < ranges.count {
            let rest = ranges[next].length - offset
            if count < rest {
                offset += count
                return
            }
            count -= rest
            next += 1
            offset = 0
        }
    }
}
