import Glibc
import VoipdVocabulary

extension ProcFS {
    /// The counters of every thread of `processes` now, from /proc/PID/task/TID/schedstat:
    /// one read of about 30 bytes a thread gives the CPU time (first field, in nanoseconds),
    /// the time spent waiting for a CPU (second field, in nanoseconds) and the times the
    /// thread was put on a CPU (third field), which counts its wake-ups (voluntary switches)
    /// and its returns after preemption (involuntary ones) together. At most `threadLimit`
    /// threads are read (``ActivitySample/truncated`` says when there were more); processes
    /// that exited meanwhile are left out.
    ///
    /// Without schedstat (a kernel without `CONFIG_SCHED_INFO`) every thread's counters are
    /// zero and the group always looks idle: ``schedulerStatisticsAvailable`` tells.
    public static func activity(of processes: [pid_t], threadLimit: Int = 4096) -> ActivitySample {
        var sample = ActivitySample(instant: .now, threads: [:])
        for pid in processes {
            for thread in ProcessTree.numericEntries("/proc/\(pid)/task") {
                guard sample.threads.count < threadLimit else {
                    sample.truncated = true
                    return sample
                }
                guard let text = read("/proc/\(pid)/task/\(thread)/schedstat") else { continue }
                let fields = text.split(separator: " ")
                guard fields.count >= 3, let nanoseconds = Int64(fields[0]), let waiting = Int64(fields[1]),
                      let runs = UInt64(fields[2].prefix { $0.isNumber }) else { continue }
                sample.threads[thread] = ActivitySample.ThreadCounters(runs: runs, cpuTime: .nanoseconds(nanoseconds), waiting: .nanoseconds(waiting))
            }
        }
        return sample
    }

    /// Whether the kernel keeps the per-thread scheduler statistics ``activity(of:threadLimit:)`` reads.
    public static var schedulerStatisticsAvailable: Bool {
        access("/proc/self/schedstat", R_OK) == 0
    }
}
