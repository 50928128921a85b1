import Glibc
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// `voipd-bench freeze`: the cgroup freezer's primitives against freeze_floor.c, one
/// configuration (cgroup version × CPU placement) at a time; then confirming by the
/// notification alone, starting programs in a cgroup, and the SIGSTOP side's checks.
enum FreezeBenchmark {
    static func main(_ arguments: [String]) -> Int32 {
        runSubcommand("freeze", arguments: arguments, run: run)
    }

    private static func run(_ options: FreezeOptions) throws {
        guard geteuid() == 0 || options.cgroupDirectory != nil else {
            throw BenchError("making cgroups needs root (or --cgroup-directory naming one delegated to this user)")
        }
        if let slack = options.timerSlack {
            try setTimerSlack(.nanoseconds(slack))
        }
        let directory = try TemporaryDirectory("voipd-bench")
        let floor = try FloorProgram.build("freeze_floor", shared: options.shared, into: directory.path)
        progress("\(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPUs, load average \(WakeBenchmark.loadAverage())")
        for version in options.versions {
            let parent = try BenchCgroupParent(version: version, configured: options.cgroupDirectory)
            defer { parent.remove() }
            for placement in options.placements {
                var result = FreezeResult(version: version, children: options.children, placement: placement, cycles: options.cycles,
                                          firstDelay: options.firstDelay)
                for run in 0..<options.runs {
                    try pinCurrentThread(to: placement.supervisorCPU)
                    progress("\(parent.freezer.name), \(options.children) children, cpu \(placement.rawValue): run \(run + 1) of \(options.runs)")
                    result.floor.append(try floor.run(floorArguments(version, options, placement, root: parent.mount.mountPoint),
                                                      required: ["thaw_to_read_return_p50", "freeze_plus_confirm_frozen_p50"]))
                    let fleet = try FreezeFleet(freezer: parent.freezer, count: options.children, placement: placement, firstDelay: options.firstDelay)
                    defer { fleet.tearDown() }
                    result.ours.append(try fleet.cycle(options.cycles, seed: options.seed))
                }
                emit(options.json ? result.json : result.lines)
            }
            try pinCurrentThread(to: nil)
            if version == .v2 {
                let fleet = try FreezeFleet(freezer: parent.freezer, count: min(options.children, 10), placement: .scheduler)
                defer { fleet.tearDown() }
                let times = Percentiles(nanoseconds: try fleet.cycleByNotificationOnly(100, seed: options.seed))
                emit(options.json
                     ? jsonLine(NotificationOnlyFigures(cycles: 100, p50: Rounded(times.p50), p99: Rounded(times.p99)))
                     : "notification only (v2, 100 cycles): freeze → confirmed p50 \(fixed(times.p50 / 1000)) ms p99 \(fixed(times.p99 / 1000)) ms")
            }
            emit(try LaunchFigures.measure(parent.freezer).text(json: options.json))
        }
        emit(try StopWitnessFigures.measure().text(json: options.json))
        progress("done; load average \(WakeBenchmark.loadAverage())")
    }

    private static func floorArguments(_ version: CgroupVersion, _ options: FreezeOptions, _ placement: CPUPlacement, root: String) -> [String] {
        var arguments = ["-v", version == .v2 ? "2" : "1", "-n", "\(options.children)", "-m", "\(options.cycles)",
                         "-c", "\(placement.rawValue)", "-s", "\(options.seed)", "-q"]
        if version == .v2 { arguments += ["-r", root] }
        return arguments
    }

    static func emit(_ text: String) {
        print(text)
        fflush(nil)
    }
}

/// The directory the bench's cgroups go in: the configured one, or `voipd-bench-PID` at the
/// top of the version's hierarchy, made here and removed at the end.
final class BenchCgroupParent {
    let freezer: CgroupFreezer
    let mount: CgroupMount
    private let made: String?

    init(version: CgroupVersion, configured: String?) throws {
        guard let tables = CgroupTables.current(),
              let mount = tables.mounts.first(where: { $0.root == "/" && (version == .v2 ? $0.version == .v2 : $0.isV1Freezer) }) else {
            throw BenchError(version == .v2 ? "no cgroup2 file system is mounted" : "no cgroup v1 freezer hierarchy is mounted")
        }
        self.mount = mount
        let path = configured ?? mount.mountPoint + "/voipd-bench-\(getpid())"
        made = configured == nil && access(path, F_OK) != 0 ? path : nil
        switch CgroupFreezer.detect(configuredDirectory: path, instance: "voipd-bench") {
        case .available(let freezer) where freezer.version == version: self.freezer = freezer
        case .available(let freezer): throw BenchError("\(path) is in cgroup \(freezer.version.rawValue)'s hierarchy, not \(version.rawValue)'s")
        case .unavailable(let reason): throw BenchError(reason)
        }
    }

    /// Removes the directory if the bench made it (its children's cgroups are gone by then).
    func remove() {
        if let made, rmdir(made) != 0 { progress("cannot remove \(made): \(Errno.current("rmdir"))") }
    }
}

/// The figures of one configuration, ours and the floor's, per run.
struct FreezeResult {
    var version: CgroupVersion
    var children: Int
    var placement: CPUPlacement
    var cycles: Int
    var firstDelay: Duration
    var ours: [FreezeCycles] = []
    var floor: [[String: Double]] = []

    /// The median over runs of a percentile of one of our series, in µs.
    func ours(_ series: KeyPath<FreezeCycles, [UInt64]>, _ p: Double) -> Double {
        median(ours.map { Percentiles(nanoseconds: $0[keyPath: series]).microseconds(p) })
    }

    /// The median over runs of one of the floor's figures.
    func floor(_ name: String) -> Double { median(floor.compactMap { $0[name] }) }

    func share(_ how: FreezeConfirmed) -> Double {
        let total = ours.reduce(0) { $0 + $1.freezeToConfirmed.count }
        return total == 0 ? .nan : Double(ours.reduce(0) { $0 + ($1.confirmed[how] ?? 0) }) / Double(total) * 100
    }

    var rereadsPerFreeze: Double {
        let total = ours.reduce(0) { $0 + $1.freezeToConfirmed.count }
        return total == 0 ? .nan : Double(ours.reduce(0) { $0 + $1.rereads }) / Double(total)
    }

    /// Our series beside the floor's figure it compares with: (label, JSON key, ours, floor's name).
    static var series: [(String, String, KeyPath<FreezeCycles, [UInt64]>, String)] { [
        ("thaw → read returns", "thaw_to_run", \.thawToRun, "thaw_to_read_return"),
        ("thaw write", "thaw_write", \.thawWrite, "thaw_write_syscall"),
        ("freeze write", "freeze_write", \.freezeWrite, "freeze_write_syscall"),
        ("freeze → confirmed", "freeze_to_confirmed", \.freezeToConfirmed, "freeze_plus_confirm_frozen"),
    ] }

    /// (label, key, ours p50, ours p99, floor p50, floor p99)
    var rows: [(String, String, Double, Double, Double, Double)] {
        Self.series.map { label, key, ours, floorName in
            (label, key, self.ours(ours, 50), self.ours(ours, 99), floor(floorName + "_p50"), floor(floorName + "_p99"))
        }
    }

    var lines: String {
        let runs = ours.count > 1 ? " (medians of \(ours.count) runs)" : ""
        var text = "freeze \(version.rawValue) children=\(children) cpu=\(placement.rawValue) cycles=\(cycles) first-delay=\(firstDelay)\(runs):"
        for (name, _, p50, p99, floorP50, floorP99) in rows {
            text += "\n  \(name): ours p50 \(fixed(p50)) us p99 \(fixed(p99)) us | floor p50 \(fixed(floorP50)) us p99 \(fixed(floorP99)) us"
                + " | ratio p50 \(fixed(p50 / floorP50, 2)) p99 \(fixed(p99 / floorP99, 2))"
        }
        text += "\n  confirmed at once \(fixed(share(.atOnce), 1))%, by timer \(fixed(share(.byTimer), 1))%, by notification \(fixed(share(.byNotification), 1))%;"
            + " re-reads per freeze \(fixed(rereadsPerFreeze, 2))"
        text += "\n  floor: wake total p50 \(fixed(floor("wake_total_p50"))) us p99 \(fixed(floor("wake_total_p99"))) us;"
            + " cgroup mkdir \(fixed(floor("cgroup_mkdir_mean"))) us, attach by cgroup.procs \(fixed(floor("cgroup_attach_pid_mean"))) us (means)"
        return text
    }

    var json: String {
        var parts: [any Encodable] = [JSONHead(cgroupVersion: version == .v2 ? 2 : 1, children: children, cpuMode: placement.rawValue,
                                               cycles: cycles, runs: ours.count, firstDelay: Rounded(firstDelay.seconds * 1e6, 0))]
        for (_, key, p50, p99, floorP50, floorP99) in rows {
            parts.append(PercentileFigures(key, p50: Rounded(p50), p99: Rounded(p99)))
            parts.append(PercentileFigures(key + "_floor", p50: Rounded(floorP50), p99: Rounded(floorP99)))
        }
        parts.append(PercentileFigures("floor_wake_total", p50: Rounded(floor("wake_total_p50")), p99: Rounded(floor("wake_total_p99"))))
        parts.append(JSONTail(confirmedAtOnce: Rounded(share(.atOnce), 1), confirmedByTimer: Rounded(share(.byTimer), 1),
                              confirmedByNotification: Rounded(share(.byNotification), 1), rereadsPerFreeze: Rounded(rereadsPerFreeze, 2),
                              floorAttachMean: Rounded(floor("cgroup_attach_pid_mean"))))
        return jsonLine(FlatFigures(parts))
    }

    /// What the JSON line says before the series' percentiles.
    private struct JSONHead: Encodable {
        let test = "freeze"
        var cgroupVersion, children, cpuMode, cycles, runs: Int
        var firstDelay: Rounded

        enum CodingKeys: String, CodingKey {
            case test, children, cycles, runs
            case cgroupVersion = "cgroup_version", cpuMode = "cpu_mode", firstDelay = "first_delay_us"
        }
    }

    /// How freezes were confirmed (shares in %), re-reads per freeze, and the floor's mean time
    /// to attach a process through cgroup.procs.
    private struct JSONTail: Encodable {
        var confirmedAtOnce, confirmedByTimer, confirmedByNotification, rereadsPerFreeze, floorAttachMean: Rounded

        enum CodingKeys: String, CodingKey {
            case confirmedAtOnce = "confirmed_at_once_pct", confirmedByTimer = "confirmed_by_timer_pct"
            case confirmedByNotification = "confirmed_by_notification_pct", rereadsPerFreeze = "rereads_per_freeze"
            case floorAttachMean = "floor_cgroup_attach_pid_mean_us"
        }
    }
}

/// Confirming freezes by cgroup.events' notification alone, µs.
private struct NotificationOnlyFigures: Encodable {
    let test = "freeze_confirm_by_notification_only"
    var cycles: Int
    var p50, p99: Rounded

    enum CodingKeys: String, CodingKey {
        case test, cycles
        case p50 = "p50_us", p99 = "p99_us"
    }
}
