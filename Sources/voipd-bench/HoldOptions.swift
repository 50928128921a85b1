/// The options of `voipd-bench hold`.
struct HoldOptions: SubcommandOptions {
    var sockets = 19_000
    var perApp = 253
    var listings = 20
    var upgrades = 5
    var placement = CPUPlacement.oneCPU
    var json = false
    var voipd: String?

    static let usage = """
    usage: voipd-bench hold [--sockets N] [--per-app N] [--listings N] [--upgrades N]
                            [--cpu C] [--json] [--voipd PATH]

    voipd holding many sockets: N connected AF_UNIX stream sockets registered by apps of
    --per-app sockets each (the bench keeps the other ends), then `sockets` listings of
    them all and in-place upgrades carrying them all. For each: the time from the request
    to the last byte of the reply (the bench reads the frames without decoding them), and
    voipd's own CPU time for it (/proc/PID/schedstat); voipd's VmRSS before the first
    listing, after the listings, and after the upgrades.

      --sockets N    sockets held (default 19000; the bench and voipd each need N
                     descriptors: at most the hard RLIMIT_NOFILE less a hundred)
      --per-app N    sockets per app, 1…253 (default 253, voipd's socketQuota limit)
      --listings N   timed `sockets` listings (default 20, after 2 not timed)
      --upgrades N   timed in-place upgrades (default 5)
      --cpu C        0 scheduler's choice, 1 everything on CPU 0 (default), 2 voipd on
                     CPU 0 and the bench on CPU 1
      --json         one JSON object
      --voipd PATH   the voipd binary (default: build it beside this bench)
    """

    mutating func read(_ flag: String, from reader: inout OptionReader) throws {
        switch flag {
        case "--sockets": sockets = try reader.integer(flag, in: 1...1_000_000)
        case "--per-app": perApp = try reader.integer(flag, in: 1...253)
        case "--listings": listings = try reader.integer(flag, in: 1...10_000)
        case "--upgrades": upgrades = try reader.integer(flag, in: 0...1000)
        case "--cpu":
            let placements = try reader.placements(flag)
            guard placements.count == 1 else { throw UsageError(description: "--cpu takes one placement here") }
            placement = placements[0]
        case "--json": json = true
        case "--voipd": voipd = try reader.value(flag)
        default: throw OptionReader.unknown(flag)
        }
    }
}
