/// The options of `voipd-bench sip`; the defaults are what the softphone issue asks for.
struct SIPOptions: SubcommandOptions {
    /// Which SIP server carries the calls.
    enum Registrar: String, CaseIterable {
        /// `SIPRegistrar`, on a thread of the bench.
        case embedded
        /// Kamailio with Deploy/kamailio/kamailio.cfg, on a free loopback port.
        case kamailio
    }

    /// Who is called.
    enum Callee: String, CaseIterable {
        /// The project's softphone, speaking voipd's protocol: running and suspended.
        case softphone
        /// baresip, unmodified: unsupervised, adopted and running, adopted and suspended.
        case baresip
    }

    var calls = 200
    /// Runs per registrar and placement, each with a fresh voipd, registrar and softphone;
    /// medians are reported.
    var runs = 1
    /// Untimed calls per mode first; nil: min(calls / 10, 20).
    var warmUp: Int?
    var registrars: [Registrar] = Registrar.allCases
    var callees: [Callee] = Callee.allCases
    var placements: [CPUPlacement] = [.scheduler]
    var floorWakes = 10_000
    var seed: UInt64 = 1
    var json = false
    var shared = BenchPaths.defaultShared
    var voipd: String?
    var softphone: String?
    var kamailio = "/usr/sbin/kamailio"
    var baresip = "/usr/bin/baresip"

    var warmUpCalls: Int { warmUp ?? min(calls / 10, 20) }

    static let usage = """
    usage: voipd-bench sip [--calls N] [--runs N] [--warm-up N] [--registrar LIST] [--callee LIST]
                           [--cpu LIST] [--floor-wakes N] [--seed S] [--json] [--shared PATH]
                           [--voipd PATH] [--softphone PATH] [--kamailio PATH] [--baresip PATH]

    INVITE → 180 Ringing at the caller, with the callee (the softphone under voipd) running
    in the foreground and suspended in the background, alternating call by call; p50 and
    p99 of each mode, the suspension's cost (the difference of the p50s) and the target:
    no more than twice the wake floor's p50 (SHARED/bench/wake_floor.c -n 1, same run,
    same CPU placement). With baresip as the callee (unmodified, registered over TCP, as
    voipd adopts it with `sip`): calls in turn to an unsupervised baresip, to one voipd
    adopted in the foreground and to it suspended; the cost is suspended minus unsupervised.

      --calls N          timed calls per mode (default 200)
      --runs N           runs per registrar (fresh voipd, registrar and softphone each time,
                         registrars in turn); the medians of the runs are reported (default 1)
      --warm-up N        untimed calls per mode first (default min(calls/10, 20))
      --registrar LIST   embedded, kamailio or both (default embedded,kamailio); Kamailio
                         is skipped, with a message, when its binary is missing
      --callee LIST      softphone, baresip or both (default softphone,baresip); baresip
                         is skipped, with a message, when its binary is missing
      --cpu LIST         CPU placements (default 0): 0 scheduler's choice, 1 everything
                         on CPU 0 (bench, registrar, voipd, softphone, floor)
      --floor-wakes N    the floor's -m (default 10000)
      --seed S           the floor's -s (default 1)
      --json             one JSON object per line, one per registrar and placement
      --shared PATH      the directory holding bench/wake_floor.c (default ../shared)
      --voipd PATH       the voipd binary (default: built next to this executable)
      --softphone PATH   the softphone binary (default: next to this executable)
      --kamailio PATH    the Kamailio binary (default /usr/sbin/kamailio)
      --baresip PATH     the baresip binary (default /usr/bin/baresip)
    """

    mutating func read(_ flag: String, from reader: inout OptionReader) throws {
        switch flag {
        case "--calls": calls = try reader.integer(flag, in: 1...100_000)
        case "--runs": runs = try reader.integer(flag, in: 1...100)
        case "--warm-up": warmUp = try reader.integer(flag, in: 0...10_000)
        case "--registrar": registrars = try reader.list(flag) { Registrar(rawValue: $0) }
        case "--callee": callees = try reader.list(flag) { Callee(rawValue: $0) }
        case "--cpu": placements = try reader.placements(flag, allowed: [.scheduler, .oneCPU])
        case "--floor-wakes": floorWakes = try reader.integer(flag, in: 1...1_000_000)
        case "--seed": seed = try reader.seed(flag)
        case "--json": json = true
        case "--shared": shared = try reader.value(flag)
        case "--voipd": voipd = try reader.value(flag)
        case "--softphone": softphone = try reader.value(flag)
        case "--kamailio": kamailio = try reader.value(flag)
        case "--baresip": baresip = try reader.value(flag)
        default: throw OptionReader.unknown(flag)
        }
    }
}
