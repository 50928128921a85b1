/// The options of `voipd-bench wake`; the defaults are what the benchmark must report.
struct WakeOptions {
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

    static let usage = """
    usage: voipd-bench wake [--wakes N] [--apps N,N,...] [--cpu C,C,...] [--runs N]
                            [--idle-apps N] [--idle-seconds S] [--seed S] [--json]
                            [--control-flood N] [--suspension signal|freezer] [--shared PATH] [--voipd PATH]

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
      --json             one JSON object per line: one per configuration, one for the idle test
      --shared PATH      the directory holding bench/wake_floor.c (default: ../shared
                         next to the package)
      --voipd PATH       the voipd binary (default: built with `swift build --product voipd`
                         next to this executable)
    """

    struct UsageError: Error, CustomStringConvertible {
        var description: String
    }

    static func parse(_ arguments: [String]) throws -> WakeOptions {
        var options = WakeOptions()
        var iterator = arguments.makeIterator()
        func value(_ flag: String) throws -> String {
            guard let next = iterator.next() else { throw UsageError(description: "\(flag) needs a value") }
            return next
        }
        func number(_ flag: String, minimum: Int) throws -> Int {
            let text = try value(flag)
            guard let n = Int(text), n >= minimum else { throw UsageError(description: "\(flag) needs a number ≥ \(minimum), not \(text)") }
            return n
        }
        func list(_ flag: String) throws -> [Int] {
            let text = try value(flag)
            let numbers = text.split(separator: ",").compactMap { Int($0) }
            guard !numbers.isEmpty, numbers.count == text.split(separator: ",").count else {
                throw UsageError(description: "\(flag) needs comma-separated numbers, not \(text)")
            }
            return numbers
        }
        while let argument = iterator.next() {
            switch argument {
            case "--wakes": options.wakes = try number(argument, minimum: 1)
            case "--apps":
                options.appCounts = try list(argument)
                guard options.appCounts.allSatisfy({ $0 >= 1 && $0 <= 5000 }) else { throw UsageError(description: "--apps: 1…5000 each (the floor's limit)") }
            case "--cpu":
                let modes = try list(argument)
                options.placements = try modes.map { mode in
                    guard let placement = CPUPlacement(rawValue: mode) else { throw UsageError(description: "--cpu: 0, 1 or 2, not \(mode)") }
                    return placement
                }
            case "--runs": options.runs = try number(argument, minimum: 1)
            case "--idle-apps": options.idleApps = try number(argument, minimum: 1)
            case "--idle-seconds": options.idleSeconds = try number(argument, minimum: 0)
            case "--seed":
                let text = try value(argument)
                guard let seed = UInt64(text) else { throw UsageError(description: "--seed needs a number, not \(text)") }
                options.seed = seed
            case "--control-flood": options.controlFlood = try number(argument, minimum: 0)
            case "--suspension":
                switch try value(argument) {
                case "signal": options.freezer = false
                case "freezer": options.freezer = true
                case let other: throw UsageError(description: "--suspension: signal or freezer, not \(other)")
                }
            case "--json": options.json = true
            case "--shared": options.shared = try value(argument)
            case "--voipd": options.voipd = try value(argument)
            case "-h", "--help": throw UsageError(description: "")
            default: throw UsageError(description: "unknown argument \(argument)")
            }
        }
        guard options.wakes <= 1_000_000 else { throw UsageError(description: "--wakes: at most 1000000 (the floor's limit)") }
        return options
    }
}
