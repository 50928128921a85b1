import Glibc
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// Where a suspended app's memory is, as far as hibernation goes. Each names the process it
/// was decided for: a record whose process is gone says nothing about the app's next one.
enum AppHibernation {
    /// Being paged out, a slice per turn of voipd's loop.
    case pagingOut(PageOut)
    /// Paged out; it stays so until the next resume.
    case hibernated(HibernatedApp)
    /// Too much dirty memory to hibernate: it stays suspended, first to end under pressure.
    case overLimit(pid: pid_t, dirty: UInt64)

    var pid: pid_t {
        switch self {
        case .pagingOut(let job): return job.pid
        case .hibernated(let done): return done.pid
        case .overLimit(let pid, _): return pid
        }
    }
}

/// One process of an app being paged out.
final class PageOutTarget {
    let pid: pid_t
    /// Its own pidfd for a helper process; nil for the app's process, whose pidfd the app's
    /// record owns.
    let pidfd: PidFd?
    var advice: ProcessMemoryAdvice

    init(pid: pid_t, pidfd: consuming PidFd?, regions: [MemoryRegion]) {
        self.pid = pid
        self.pidfd = pidfd
        advice = ProcessMemoryAdvice(.pageOut, regions: regions)
    }

    /// Pages out up to `budget` more bytes; `app` is the app's own process's pidfd.
    func perform(upTo budget: UInt64, app: borrowing PidFd) throws -> UInt64 {
        switch pidfd {
        case .some(let own): return try advice.perform(on: own, upTo: budget)
        case .none: return try advice.perform(on: app, upTo: budget)
        }
    }
}

/// A page-out under way: every process of the app, advised `MADV_PAGEOUT` range by range.
final class PageOut {
    let pid: pid_t
    let reason: String
    var targets: [PageOutTarget]
    let before: MemoryCounters
    let dirty: UInt64
    /// Where the pages go ("zram0 (lzo-rle)", "/swapfile"); nil: there is no swap, and only
    /// pages that files back can go.
    let swap: String?
    let startedAt: MonotonicInstant
    /// The `voipctl hibernate` that asked for it, answered when it is done: (client, request).
    var waiter: (client: UInt64, request: UInt64)?

    init(pid: pid_t, reason: String, targets: [PageOutTarget], before: MemoryCounters, dirty: UInt64, swap: String?,
         startedAt: MonotonicInstant) {
        self.pid = pid
        self.reason = reason
        self.targets = targets
        self.before = before
        self.dirty = dirty
        self.swap = swap
        self.startedAt = startedAt
    }

    var isFinished: Bool { targets.allSatisfy(\.advice.isFinished) }
    var refused: [RefusedRange] { targets.flatMap(\.advice.refused) }
}

/// A hibernated app's figures, for the log and `status`.
struct HibernatedApp {
    let pid: pid_t
    let dirty: UInt64
    let before: MemoryCounters
    let after: MemoryCounters
    let swap: String?
    let duration: Duration
}

/// Every app's hibernation, and what voipd learnt about hibernating at all.
final class Hibernations {
    var apps: [AppID: AppHibernation] = [:]
    /// Why voipd no longer tries (no `CAP_SYS_NICE`: EPERM; a kernel without
    /// process_madvise: ENOSYS), once it found out.
    var disabled: String?
    /// The log said once that without swap the timer hibernates nothing.
    var saidNoSwap = false
    /// Why the last hibernation asked for did not start, for the request's reply.
    var lastRefusal: String?

    /// The app's hibernation, if it concerns the process `pid`; a record of an earlier
    /// process is dropped.
    func state(of name: AppID, pid: pid_t?) -> AppHibernation? {
        guard let state = apps[name] else { return nil }
        guard state.pid == pid else {
            apps[name] = nil
            return nil
        }
        return state
    }

    /// Whether the client `id` waits for a page-out's end (its `voipctl hibernate`).
    func pageOutAwaited(by id: UInt64) -> Bool {
        apps.values.contains { if case .pagingOut(let job) = $0 { return job.waiter?.client == id } else { return false } }
    }

    /// Whether a page-out is under way for any app.
    var pageOutsUnderWay: Bool {
        apps.values.contains { if case .pagingOut = $0 { return true } else { return false } }
    }
}

extension MemoryCounters {
    /// The counters of several processes added up (those that ended are left out).
    static func sum(_ pids: [pid_t]) -> MemoryCounters {
        var total = MemoryCounters()
        for pid in pids {
            do {
                total += try MemoryCounters.of(pid)
            } catch {
                // A helper that ended since has nothing left to count.
                continue
            }
        }
        return total
    }
}

/// Bytes as MB with one decimal, for the log ("28.2 MB").
func megabytes(_ bytes: UInt64) -> String {
    let tenths = (bytes * 10 + (1 << 19)) >> 20
    return "\(tenths / 10).\(tenths % 10) MB"
}
