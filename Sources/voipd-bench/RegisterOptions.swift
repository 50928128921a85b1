/// The options of `voipd-bench register`.
struct RegisterOptions: SubcommandOptions {
    var roundTrips = 10_000
    var batch = 64
    var placements: [CPUPlacement] = [.oneCPU]
    var runs = 3
    var json = false
    var voipd: String?
    var shared = BenchPaths.defaultShared

    static let usage = """
    usage: voipd-bench register [--round-trips N] [--batch N] [--cpu C,C,...] [--runs N] [--json]
                                [--voipd PATH] [--shared PATH]

    registerSocket and retrieveSocket round trips: an app's request with one descriptor and
    voipd's reply, and a request and the reply carrying one descriptor, through VoipClient's
    VoipdConnection as an app makes them. Beside them, in the same run with the same
    placement: the kernel's floor (SHARED/bench/fdpass_floor.c: a request → a reply with one
    descriptor over SOCK_SEQPACKET) and s6-fdholderd's store and retrieve, driven in-process
    through libs6 (Benchmarks/s6_fdholder_client.c, built with gcc when libs6-dev is
    installed; the report says so when it is not).

      --round-trips N   timed round trips of each kind per run (default 10000), after
                        min(N/10, 200) warm-up
      --batch N         names registered before they are retrieved and released (default
                        64, voipd's default socketQuota; s6 stores as many identifiers)
      --cpu LIST        CPU placements (default 1): 0 scheduler's choice, 1 everything on
                        CPU 0, 2 the daemons on CPU 0 and the clients on CPU 1
      --runs N          alternate N runs of the floor, voipd and s6; report the medians (default 3)
      --json            one JSON object per line
      --voipd PATH      the voipd binary (default: build it beside this bench)
      --shared PATH     the directory holding bench/fdpass_floor.c (default: ../shared next
                        to the package)
    """

    mutating func read(_ flag: String, from reader: inout OptionReader) throws {
        switch flag {
        case "--round-trips": roundTrips = try reader.integer(flag, in: 1...1_000_000)
        case "--batch": batch = try reader.integer(flag, in: 1...253)
        case "--runs": runs = try reader.integer(flag, in: 1...99)
        case "--cpu": placements = try reader.placements(flag)
        case "--json": json = true
        case "--voipd": voipd = try reader.value(flag)
        case "--shared": shared = try reader.value(flag)
        default: throw OptionReader.unknown(flag)
        }
    }
}
