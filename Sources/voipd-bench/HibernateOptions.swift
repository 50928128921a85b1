/// The options of `voipd-bench hibernate`; the defaults are what docs/BENCHMARKS.md reports.
struct HibernateOptions: SubcommandOptions {
    enum Swap: String, CaseIterable {
        case zram
        case file
        /// No swap area: what paging out gives back without one.
        case none
    }

    var megabytes = [10, 100]
    var swaps: [Swap] = [.zram, .file]
    var wakes = 20
    var placement = CPUPlacement.oneCPU
    var zramAlgorithm: String?
    var floorWakes = 1000
    var json = false
    var shared = BenchPaths.defaultShared

    static let usage = """
    usage: voipd-bench hibernate [--megabytes N,N,...] [--swap zram,file,none] [--wakes N]
                                 [--cpu C] [--zram-algorithm NAME] [--floor-wakes N]
                                 [--json] [--shared PATH]

    Pages a stopped app out with process_madvise(MADV_PAGEOUT) into a swap area the bench
    sets up (as root) and removes again, and measures the memory given back, the time to
    page out, and the wake latency (a write on the app's socket until its read returns, and
    until it has read all its memory back) against a merely stopped app and against the
    kernel's floor (SHARED/bench/wake_floor.c -n 1 -P, same run, same placement).

      --megabytes LIST   the app's anonymous memory, written with a known pattern
                         (default 10,100)
      --swap LIST        where the pages go: zram (a zram device of the bench's own), file
                         (a swap file in its temporary directory), none (no swap area: only
                         what files back can go; refused while any swap is on)
                         (default zram,file)
      --wakes N          timed wakes per mode (default 20), after 2 for warm-up
      --cpu C            placement, as the floor's -c (default 1: everything on CPU 0;
                         0: the scheduler's choice)
      --zram-algorithm A the zram device's compression (default: the kernel's)
      --floor-wakes N    the floor's -m (default 1000)
      --json             one JSON object per line, one per swap area and app size
      --shared PATH      the directory holding bench/wake_floor.c (default: ../shared
                         next to the package)
    """

    mutating func read(_ flag: String, from reader: inout OptionReader) throws {
        switch flag {
        case "--megabytes": megabytes = try reader.list(flag) { Int($0).flatMap { (1...4096).contains($0) ? $0 : nil } }
        case "--swap": swaps = try reader.list(flag) { Swap(rawValue: $0) }
        case "--wakes": wakes = try reader.integer(flag, in: 1...100_000)
        case "--cpu": placement = CPUPlacement(rawValue: try reader.integer(flag, in: 0...1))!
        case "--zram-algorithm": zramAlgorithm = try reader.value(flag)
        case "--floor-wakes": floorWakes = try reader.integer(flag, in: 1...1_000_000)
        case "--json": json = true
        case "--shared": shared = try reader.value(flag)
        default: throw OptionReader.unknown(flag)
        }
    }
}
