import Glibc

// voipd-bench: voipd's figures beside the kernel's floor (../shared/bench), from the same
// run on the same machine, as ratios. See docs/BENCHMARKS.md, and `benchmarks` below.
// Internal: `app` is the app voipd launches; `memory-app` the hibernation benchmark's app;
// `guarded-exec` starts voipd and the floor; `freeze-child` is a child of the freeze benchmark;
// `register-client` is the register benchmark's app alone, against a voipd already running.

/// The benchmarks, each with what it measures (`voipd-bench NAME --help` for its options).
let benchmarks: [(name: String, summary: String, main: ([String]) -> Int32)] = [
    ("wake", "the wake path and an idle daemon", WakeBenchmark.main),
    ("sip", "INVITE → 180 with the softphone running and suspended", SIPBenchmark.main),
    ("transfer", "a large download through the transfer agent against curl", TransferBenchmark.main),
    ("hibernate", "a stopped app paged out into zram or a swap file, and woken", HibernateBenchmark.main),
    ("softphones", "unmodified baresip and linphonec: idle and in-call cost", SoftphonesBenchmark.main),
    ("idle-cost", "an unmodified softphone idle: unsupervised, and adopted and suspended", IdleCostBenchmark.main),
    ("freeze", "the cgroup freezer's thaw, freeze and confirmation against its floor", FreezeBenchmark.main),
    ("register", "registerSocket and retrieveSocket against the floor and s6-fdholderd", RegisterBenchmark.main),
    ("codec", "what encoding and decoding the request path's messages costs", CodecBenchmark.main),
    ("startup", "voipd's start to READY=1 and memory, voipctl's run, against s6", StartupBenchmark.main),
    ("hold", "many held sockets: listing them, upgrading in place with them", HoldBenchmark.main),
]

/// The programs the benchmarks start, which are this executable too.
let internals: [(name: String, main: ([String]) -> Int32)] = [
    ("freeze-child", FreezeChild.main), ("app", BenchApp.main), ("memory-app", MemoryApp.main), ("guarded-exec", GuardedExec.main),
    ("register-client", RegisterBenchmark.clientMain),
]

let width = benchmarks.map(\.name.count).max()!
let usage = "usage: voipd-bench BENCHMARK [OPTIONS]   (voipd-bench BENCHMARK --help for its options)\n"
    + benchmarks.map { "  " + $0.name + String(repeating: " ", count: width - $0.name.count) + "  " + $0.summary }.joined(separator: "\n")

let arguments = Array(CommandLine.arguments.dropFirst())
if let name = arguments.first,
   let main = benchmarks.first(where: { $0.name == name })?.main ?? internals.first(where: { $0.name == name })?.main {
    exit(main(Array(arguments.dropFirst())))
}
switch arguments.first {
case "-h", "--help":
    print(usage)
default:
    writeError(usage + "\n")
    exit(2)
}
