/// The options of `voipd-bench wake`; the defaults are what the benchmark must report.
struct WakeOptions: SubcommandOptions {
    var wakes = 10_000
    var appCounts = [1, 100, 1000]
    var placements: [CPUPlacement] = [.scheduler, .oneCPU]
    /// Alternating runs of the floor and of voipd per configuration; medians are reported.
    var runs = 1
    var idleApps = 100
    var idleSeconds = 10
    var seed: UInt64 = 1
    var json = false
    var shared = BenchPaths.defaultShared
    var voipd: String?
    /// Threads flooding voipd with `status` requests while the wakes are timed (0: none).
    var controlFlood = 0
    /// How voipd suspends the apps: with signals, or the cgroup freezer (against freeze_floor.c).
    var freezer = false
    /// The apps woken, in turn: each configuration is measured with each (the floor's runs with it).
    var apps: [WakeAppKind] = [.swift]

    static let usage = """
    usage: voipd-bench wake [--wakes N] [--apps N,N,...] [--cpu C,C,...] [--runs N]
                            [--idle-apps N] [--idle-seconds S] [--seed S] [--json]
                            [--control-flood N] [--suspension signal|freezer] [--app swift,c]
                            [--shared PATH] [--voipd PATH]

    Measures voipd's wake path (a peer's write to a suspended app's VoIP socket until the
    app's read returns) against the kernel's floor (SHARED/bench/wake_floor.c, built with
    gcc and run in the same run with the same settings), then an idle voipd's context
    switches.

      --wakes N          timed wakes per configuration (default 10000; the floor's -m)
      --apps LIST        suspended apps per configuration (default 1,100,1000; the floor's -n)
      --cpu LIST         CPU placements (default 0,1; the floor's -c): 0 scheduler's choice,
                         1 everything on CPU 0, 2 voipd on CPU 0, peer and apps on CPU 1
      --runs N           alternate N runs of the floor and of voipd per configuration and
                         report the medians (default 1)
      --idle-apps N      suspended apps during the idle test (default 100)
      --idle-seconds S   length of the idle test (default 10; 0 skips it)
      --seed S           random choice of the app to wake, as the floor's -s (default 1)
      --control-flood N  while voipd's wakes are timed, N threads each ask it for the status
                         of every app as fast as it answers, on connections of their own
                         (default 0: none; the floor runs without them)
      --suspension S     signal (default): voipd stops the apps with SIGSTOP, against
                         wake_floor.c; freezer: voipd freezes each app's cgroup (in a cgroup
                         v2 directory of the bench's own, removed at the end; needs root),
                         against freeze_floor.c
      --app LIST         the app voipd wakes, each in turn (default swift): swift is
                         `voipd-bench app` (VoipClient, the Swift runtime and Foundation
                         loaded); c is Benchmarks/wake_app.c, the same app in C with libvoipd
                         compiled in, built with gcc like the floor (only libc loaded)
      --json             one JSON object per line: one per configuration, one for the idle test
      --shared PATH      the directory holding bench/wake_floor.c (default: ../shared
                         next to the package)
      --voipd PATH       the voipd binary (default: built with `swift build --product voipd`
                         next to this executable)
    """

    mutating func read(_ flag: String, from reader: inout OptionReader) throws {
        switch flag {
        // The floor's limits: a million wakes, 5000 apps.
        case "--wakes": wakes = try reader.integer(flag, in: 1...1_000_000)
        case "--apps": appCounts = try reader.integers(flag, in: 1...5000)
        case "--cpu": placements = try reader.placements(flag)
        case "--runs": runs = try reader.integer(flag, in: 1...Int.max)
        case "--idle-apps": idleApps = try reader.integer(flag, in: 1...Int.max)
        case "--idle-seconds": idleSeconds = try reader.integer(flag, in: 0...Int.max)
        case "--seed": seed = try reader.seed(flag)
        case "--control-flood": controlFlood = try reader.integer(flag, in: 0...Int.max)
        case "--suspension":
            switch try reader.value(flag) {
            case "signal": freezer = false
            case "freezer": freezer = true
            case let other: throw UsageError(description: "--suspension: signal or freezer, not \(other)")
            }
        case "--app": apps = try reader.list(flag) { WakeAppKind(rawValue: $0) }
        case "--json": json = true
        case "--shared": shared = try reader.value(flag)
        case "--voipd": voipd = try reader.value(flag)
        default: throw OptionReader.unknown(flag)
        }
    }
}
