import Glibc
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// `voipd-bench wake`: for each CPU placement and app count, the floor and voipd with the
/// same settings, side by side; then an idle voipd's context switches.
enum WakeBenchmark {
    static func main(_ arguments: [String]) -> Int32 {
        runSubcommand("wake", arguments: arguments, run: run)
    }

    private static func run(_ options: WakeOptions) throws {
        let voipd = try options.voipd ?? BenchPaths.buildVoipd()
        let directory = try TemporaryDirectory("voipd-bench")
        guard !options.freezer || geteuid() == 0 else { throw BenchError("--suspension freezer makes cgroups: it needs root") }
        let cgroups = try options.freezer ? BenchCgroupParent(version: .v2, configured: nil) : nil
        defer { cgroups?.remove() }
        let floor = try cgroups.map { try WakeFloor.buildFreezer(shared: options.shared, into: directory.path, root: $0.mount.mountPoint) }
            ?? WakeFloor.build(shared: options.shared, into: directory.path)
        let programs = try options.apps.map { $0 == .c ? try WakeApp.buildC(into: directory.path) : WakeApp.swift }
        progress("\(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPUs, load average \(loadAverage())")
        var idleMeasured = options.idleSeconds == 0
        // The apps innermost: a configuration's runs with each app follow each other, under
        // the same load.
        for placement in options.placements {
            for apps in options.appCounts {
                for program in programs {
                    let idle = !idleMeasured && apps == options.idleApps ? options.idleSeconds : 0
                    let (result, idleResult) = try measure(program, apps: apps, placement: placement, wakes: options.wakes,
                                                           idleSeconds: idle, options: options, voipd: voipd, floor: floor,
                                                           directory: directory.path, cgroups: cgroups)
                    emit(options.json ? result.json : result.line)
                    if let idleResult {
                        emit(options.json ? idleResult.json : idleResult.line)
                        idleMeasured = true
                    }
                }
            }
        }
        if !idleMeasured {
            let (_, idleResult) = try measure(programs[0], apps: options.idleApps, placement: .scheduler, wakes: 0,
                                              idleSeconds: options.idleSeconds, options: options, voipd: voipd, floor: nil,
                                              directory: directory.path, cgroups: cgroups)
            if let idleResult { emit(options.json ? idleResult.json : idleResult.line) }
        }
        progress("done; load average \(loadAverage())")
    }

    /// One configuration: a fresh voipd placed as asked, its apps suspended, then
    /// alternating runs of the floor and of the timed wakes; and the idle window if asked.
    private static func measure(_ program: WakeApp, apps: Int, placement: CPUPlacement, wakes: Int, idleSeconds: Int,
                                options: WakeOptions, voipd: String, floor: WakeFloor?, directory: String,
                                cgroups: BenchCgroupParent?) throws -> (WakeResult, IdleResult?) {
        let result = WakeResult(apps: apps, placement: placement, wakes: wakes, controlFlood: options.controlFlood,
                                freezer: cgroups != nil, app: program.kind)
        // voipd inherits this thread's CPU mask, and its apps inherit voipd's.
        try pinCurrentThread(to: placement.supervisorCPU)
        let appCgroups = cgroups.map { $0.freezer.directory + "/voipd" }
        let daemon = try DaemonUnderTest(binary: voipd, directory: directory, configurationText: appCgroups.map {
            #"{"suspension": "freezer", "cgroupDirectory": "\#($0)"}"# + "\n"
        } ?? DaemonUnderTest.signals)
        var fleet: AppFleet?
        defer {
            // voipd resumes its apps as it stops; whatever is left is killed.
            daemon.stop()
            fleet?.killAll()
            if let appCgroups { removeAppCgroups(appCgroups) }
        }
        do {
            fleet = try AppFleet(daemon: daemon, directory: directory)
            return try measureSuspended(result, program: program, fleet: fleet!, daemon: daemon, idleSeconds: idleSeconds, options: options,
                                        floor: floor)
        } catch {
            throw BenchError("app=\(program.kind.rawValue) apps=\(apps) cpu=\(placement.rawValue): \(error)\n"
                             + "voipd's log ends:\n\(daemon.log(tail: 20))")
        }
    }

    /// The apps started and suspended, the alternating runs, and the idle window.
    private static func measureSuspended(_ configuration: WakeResult, program: WakeApp, fleet: AppFleet, daemon: DaemonUnderTest,
                                         idleSeconds: Int, options: WakeOptions, floor: WakeFloor?) throws -> (WakeResult, IdleResult?) {
        var result = configuration
        let (apps, placement, wakes) = (result.apps, result.placement, result.wakes)
        try pinCurrentThread(to: placement.peerCPU)
        let started = MonotonicInstant.now
        try fleet.start(program, count: apps, appCPU: placement == .split ? placement.peerCPU : nil)
        result.setupSeconds = (MonotonicInstant.now - started).seconds
        (result.appRSSBytes, result.appsPSSBytes) = fleet.memory()
        progress("app=\(program.kind.rawValue) apps=\(apps) cpu=\(placement.rawValue): "
                 + "\(apps) apps suspended in \(fixed(result.setupSeconds, 1)) s; "
                 + "one app's RSS \(fixed(Double(result.appRSSBytes) / 1_048_576, 1)) MB, "
                 + "all apps' PSS \(fixed(Double(result.appsPSSBytes) / 1_048_576, 1)) MB; load average \(loadAverage())")
        if let floor, wakes > 0 {
            for _ in 0..<options.runs {
                let figures = try floor.run(children: apps, wakes: wakes, placement: placement, seed: options.seed)
                result.floor.append((figures["wake_total_p50"]!, figures["wake_total_p99"]!))
                let flood = options.controlFlood > 0 ? ControlFlood(socketPath: daemon.socketPath, threads: options.controlFlood) : nil
                let samples = try WakeLoop(fleet: fleet, wakes: wakes, seed: options.seed).run()
                if let flood { result.floodRates.append(try flood.stop()) }
                let ours = Percentiles(nanoseconds: samples)
                result.ours.append((ours.p50, ours.p99))
            }
        }
        guard idleSeconds > 0 else { return (result, nil) }
        try daemon.waitForStatusUpdate(milliseconds: 3000)
        let before = try daemon.contextSwitches()
        // The one deliberate sleep: the idle window itself.
        sleep(UInt32(idleSeconds))
        let after = try daemon.contextSwitches()
        let idle = IdleResult(apps: apps, seconds: idleSeconds, voluntary: after.voluntary - before.voluntary,
                              involuntary: after.involuntary - before.involuntary)
        return (result, idle)
    }

    private static func emit(_ line: String) {
        print(line)
        fflush(nil)
    }

    /// The first three fields of /proc/loadavg.
    static func loadAverage() -> String {
        (ProcFS.read("/proc/loadavg") ?? "?").split(separator: " ").prefix(3).joined(separator: " ")
    }
}

/// Removes the app cgroups voipd made in `directory` and the directory: each thawed, its
/// processes killed and gone first (the apps of a stopped voipd are not its business any more).
func removeAppCgroups(_ directory: String) {
    let freezer = CgroupFreezer(version: .v2, directory: directory, origin: .configured)
    do {
        for name in try freezer.appsWithCgroups() {
            let cgroup = try freezer.openAppCgroup(for: name)
            try cgroup.thaw()
            let deadline = MonotonicInstant.now + .seconds(10)
            while try cgroup.isPopulated() {
                guard MonotonicInstant.now < deadline else { throw BenchError("\(cgroup.path) still has processes after 10 s") }
                try cgroup.killAll()
                var watched = pollfd(fd: cgroup.stateFile.rawValue, events: Int16(POLLPRI), revents: 0)
                _ = poll(&watched, 1, 100)
            }
            try cgroup.remove()
        }
        if rmdir(directory) != 0 { throw Errno.current("rmdir(\(directory))") }
    } catch {
        progress("cannot remove the app cgroups in \(directory): \(error)")
    }
}
