import VoipdSystem

/// The options of `voipd-bench freeze`.
struct FreezeOptions: SubcommandOptions {
    var children = 100
    var cycles = 5000
    var placements: [CPUPlacement] = [.scheduler, .oneCPU]
    var versions: [CgroupVersion] = [.v2]
    var runs = 1
    var seed: UInt64 = 1
    var json = false
    var shared = BenchPaths.defaultShared
    /// Where the children's cgroups go (nil: a directory of the bench's own at the top of
    /// the mounted hierarchy, removed at the end).
    var cgroupDirectory: String?
    /// FreezeConfirmation's first re-read.
    var firstDelay = FreezeConfirmation.defaultFirstDelay
    /// The bench's timer slack (`PR_SET_TIMERSLACK`), in ns; nil keeps the default (50 µs).
    var timerSlack: Int?

    static let usage = """
    usage: voipd-bench freeze [--children N] [--cycles N] [--cpu C,C,...] [--cgroup-version V,V]
                              [--runs N] [--seed S] [--json] [--shared PATH] [--cgroup-directory DIR]
                              [--first-delay US] [--timer-slack NS]

    The cgroup freezer's primitives as voipd uses them (VoipdSystem's AppCgroup), each child
    in a cgroup of its own: a thaw until the child's read() returns, a freeze until it is
    confirmed without blocking (a read at once, then FreezeConfirmation's re-reads on a
    timerfd and cgroup.events' EPOLLPRI in one epoll set), against the kernel's floor
    (SHARED/bench/freeze_floor.c, built with gcc and run in the same run with the same
    settings). Then: confirming by the notification alone, starting a program in a cgroup
    (clone3 with CLONE_INTO_CGROUP, cgroup.procs, none), and the SIGSTOP side's checks for
    an unexpected resume. Needs root. (`voipd-bench wake --suspension freezer`, the whole
    wake path through voipd, comes with the daemon's freezer.)

      --children N        frozen children, one cgroup each (default 100; the floor's -n)
      --cycles N          timed thaw/freeze cycles per configuration (default 5000; the floor's -m)
      --cpu LIST          CPU placements (default 0,1; the floor's -c): 0 scheduler's choice,
                          1 everything on CPU 0, 2 the bench on CPU 0, the children on CPU 1
      --cgroup-version L  2, 1 or both (default 2; the floor's -v)
      --runs N            alternate N runs of the floor and of ours, report the medians (default 1)
      --seed S            random choice of the child, as the floor's -s (default 1)
      --json              one JSON object per line
      --shared PATH       the directory holding bench/freeze_floor.c (default: ../shared next
                          to the package)
      --cgroup-directory DIR   where the children's cgroups are made, v2 only (default: a
                          directory of the bench's own at the top of the hierarchy)
      --first-delay US    the confirmation's first timed re-read (default 50; then doubling)
      --timer-slack NS    the bench's timer slack, PR_SET_TIMERSLACK (default: the kernel's, 50000)
    """

    mutating func read(_ flag: String, from reader: inout OptionReader) throws {
        switch flag {
        case "--children": children = try reader.integer(flag, in: 1...2000)
        case "--cycles": cycles = try reader.integer(flag, in: 1...1_000_000)
        case "--cpu": placements = try reader.placements(flag)
        case "--cgroup-version": versions = try reader.list(flag) { ["2": .v2, "1": .v1][$0] }
        case "--runs": runs = try reader.integer(flag, in: 1...100)
        case "--seed": seed = try reader.seed(flag)
        case "--json": json = true
        case "--shared": shared = try reader.value(flag)
        case "--cgroup-directory": cgroupDirectory = try reader.value(flag)
        case "--first-delay": firstDelay = .microseconds(try reader.integer(flag, in: 1...100_000))
        case "--timer-slack": timerSlack = try reader.integer(flag, in: 1...10_000_000)
        default: throw OptionReader.unknown(flag)
        }
    }
}
