import Glibc

// voipd-bench: voipd's figures beside the kernel's floor (../shared/bench), from the same
// run on the same machine, as ratios. See docs/BENCHMARKS.md.
//   voipd-bench wake [OPTIONS]     the wake path and an idle daemon (--help for options)
//   voipd-bench sip [OPTIONS]      INVITE → 180 with the softphone running and suspended
//   voipd-bench transfer [OPTIONS] a large download through the transfer agent against curl
//   voipd-bench hibernate [OPTIONS] a stopped app paged out into zram or a swap file, and woken
//   voipd-bench softphones [OPTIONS] unmodified baresip and linphonec: idle and in-call cost
//   voipd-bench idle-cost [OPTIONS] an unmodified softphone idle: unsupervised, and adopted and suspended
//   voipd-bench freeze [OPTIONS]   the cgroup freezer's thaw, freeze and confirmation against its floor
//   voipd-bench register [OPTIONS] registerSocket and retrieveSocket against the floor and s6-fdholderd
//   voipd-bench codec [OPTIONS]    what encoding and decoding the request path's messages costs
//   voipd-bench startup [OPTIONS]  voipd's start to READY=1 and memory, voipctl's run, against s6
//   voipd-bench hold [OPTIONS]     many held sockets: listing them, upgrading in place with them
// Internal: `app` is the app voipd launches; `memory-app` the hibernation benchmark's app;
// `guarded-exec` starts voipd and the floor; `freeze-child` is a child of the freeze benchmark.

let usage = """
usage: voipd-bench wake [OPTIONS]   (voipd-bench wake --help for the options)
       voipd-bench sip [OPTIONS]    (voipd-bench sip --help for the options)
       voipd-bench transfer [OPTIONS]   (voipd-bench transfer --help for the options)
       voipd-bench hibernate [OPTIONS]  (voipd-bench hibernate --help for the options)
       voipd-bench softphones [OPTIONS] (voipd-bench softphones --help for the options)
       voipd-bench idle-cost [OPTIONS]  (voipd-bench idle-cost --help for the options)
       voipd-bench freeze [OPTIONS]     (voipd-bench freeze --help for the options)
       voipd-bench register [OPTIONS]   (voipd-bench register --help for the options)
       voipd-bench codec [OPTIONS]      (voipd-bench codec --help for the options)
       voipd-bench startup [OPTIONS]    (voipd-bench startup --help for the options)
       voipd-bench hold [OPTIONS]       (voipd-bench hold --help for the options)
"""

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "wake": exit(WakeBenchmark.main(Array(arguments.dropFirst())))
case "sip": exit(SIPBenchmark.main(Array(arguments.dropFirst())))
case "transfer": exit(TransferBenchmark.main(Array(arguments.dropFirst())))
case "hibernate": exit(HibernateBenchmark.main(Array(arguments.dropFirst())))
case "softphones": exit(SoftphonesBenchmark.main(Array(arguments.dropFirst())))
case "idle-cost": exit(IdleCostBenchmark.main(Array(arguments.dropFirst())))
case "freeze": exit(FreezeBenchmark.main(Array(arguments.dropFirst())))
case "register": exit(RegisterBenchmark.main(Array(arguments.dropFirst())))
case "codec": exit(CodecBenchmark.main(Array(arguments.dropFirst())))
case "startup": exit(StartupBenchmark.main(Array(arguments.dropFirst())))
case "hold": exit(HoldBenchmark.main(Array(arguments.dropFirst())))
case "freeze-child": exit(FreezeChild.main(Array(arguments.dropFirst())))
case "app": exit(BenchApp.main(Array(arguments.dropFirst())))
case "memory-app": exit(MemoryApp.main(Array(arguments.dropFirst())))
case "guarded-exec": exit(GuardedExec.main(Array(arguments.dropFirst())))
case "-h", "--help":
    print(usage)
default:
    writeError(usage + "\n")
    exit(2)
}
