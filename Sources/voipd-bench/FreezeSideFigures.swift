import Glibc
import VoipdSystem
import VoipdVocabulary

/// Starting a program in a cgroup: `spawn` of /bin/true (the call returns once it has
/// executed the program) with no cgroup, with clone3's CLONE_INTO_CGROUP, and with the
/// child writing itself to cgroup.procs; the floor's attach (a pid written to cgroup.procs
/// from outside) is in the freeze lines.
struct LaunchFigures {
    var version: CgroupVersion
    /// Spawn call times in ns, by way of joining.
    var plain: [UInt64] = []
    var cloneInto: [UInt64] = []
    var procsWrite: [UInt64] = []
    var cloneIntoRefusal: Errno?

    static let launches = 200

    static func measure(_ freezer: CgroupFreezer) throws -> LaunchFigures {
        var figures = LaunchFigures(version: freezer.version)
        let cgroup = try freezer.makeAppCgroup(for: "launch")
        defer { try? cgroup.remove() }
        let target = try cgroup.spawnTarget()
        let ways: [SpawnCgroup?] = freezer.version == .v2 ? [nil, target, SpawnCgroup(directory: target.directory, join: .procsWrite)] : [nil, target]
        // Interleaved, so that drift on a shared machine touches each alike.
        for _ in 0..<Self.launches {
            for (index, way) in ways.enumerated() {
                let start = MonotonicInstant.now.nanoseconds
                let process = try spawn(SpawnRequest(arguments: ["/bin/true"], environment: [], cgroup: way))
                let elapsed = MonotonicInstant.now.nanoseconds - start
                _ = try process.waitForExit()
                switch (index, freezer.version) {
                case (0, _): figures.plain.append(elapsed)
                case (1, .v2): figures.cloneInto.append(elapsed)
                default: figures.procsWrite.append(elapsed)
                }
            }
        }
        figures.cloneIntoRefusal = SpawnCgroup.cloneIntoCgroupRefusal
        return figures
    }

    func text(json: Bool) -> String {
        let plain = Percentiles(nanoseconds: plain), cloneInto = Percentiles(nanoseconds: cloneInto), procs = Percentiles(nanoseconds: procsWrite)
        if json {
            return jsonLine(JSONFigures(cgroupVersion: version == .v2 ? 2 : 1, plainP50: Rounded(plain.p50), plainP99: Rounded(plain.p99),
                                        cloneIntoCgroupP50: Rounded(cloneInto.p50), cloneIntoCgroupP99: Rounded(cloneInto.p99),
                                        procsWriteP50: Rounded(procs.p50), procsWriteP99: Rounded(procs.p99),
                                        clone3Refused: OrNull(cloneIntoRefusal.map { "\($0)" })))
        }
        var text = "launch (cgroup \(version.rawValue), spawn of /bin/true until it executes, \(Self.launches) each): no cgroup p50 \(fixed(plain.p50)) us p99 \(fixed(plain.p99)) us"
        if version == .v2 { text += " | clone3 CLONE_INTO_CGROUP p50 \(fixed(cloneInto.p50)) us p99 \(fixed(cloneInto.p99)) us" }
        text += " | cgroup.procs in the child p50 \(fixed(procs.p50)) us p99 \(fixed(procs.p99)) us"
        if let cloneIntoRefusal { text += " (clone3 refused: \(cloneIntoRefusal))" }
        return text
    }

    private struct JSONFigures: Encodable {
        let test = "launch"
        var cgroupVersion: Int
        let launches = LaunchFigures.launches
        var plainP50, plainP99, cloneIntoCgroupP50, cloneIntoCgroupP99, procsWriteP50, procsWriteP99: Rounded
        /// Why clone3 refused CLONE_INTO_CGROUP, if it did: null, not absent, when it did not.
        var clone3Refused: OrNull<String>

        enum CodingKeys: String, CodingKey {
            case test, launches
            case cgroupVersion = "cgroup_version", plainP50 = "plain_p50_us", plainP99 = "plain_p99_us"
            case cloneIntoCgroupP50 = "clone_into_cgroup_p50_us", cloneIntoCgroupP99 = "clone_into_cgroup_p99_us"
            case procsWriteP50 = "procs_write_p50_us", procsWriteP99 = "procs_write_p99_us", clone3Refused = "clone3_refused"
        }
    }
}

/// The SIGSTOP side: what it costs to check a stopped app for an unexpected resume, by /proc
/// (``StopWitness/check()``) and, for a child, by its continued report.
struct StopWitnessFigures {
    var check: [UInt64] = []
    var continuedReport: [UInt64] = []

    static let checks = 2000

    static func measure() throws -> StopWitnessFigures {
        let process = try spawn(SpawnRequest(arguments: ["/bin/sleep", "600"], environment: []))
        defer {
            try? process.send(SIGKILL)
            _ = try? process.waitForExit()
        }
        try process.send(SIGSTOP)
        for _ in 0..<10_000 where ProcFS.state(of: process.pid) != "T" { _ = poll(nil, 0, 1) }
        guard let witness = StopWitness(stoppedProcess: process.pid) else { throw BenchError("sleep did not stop") }
        var figures = StopWitnessFigures()
        for _ in 0..<Self.checks {
            var start = MonotonicInstant.now.nanoseconds
            guard witness.check() == .stillStopped else { throw BenchError("sleep resumed") }
            figures.check.append(MonotonicInstant.now.nanoseconds - start)
            start = MonotonicInstant.now.nanoseconds
            guard try !process.takeContinuedReport() else { throw BenchError("sleep was continued") }
            figures.continuedReport.append(MonotonicInstant.now.nanoseconds - start)
        }
        return figures
    }

    func text(json: Bool) -> String {
        let check = Percentiles(nanoseconds: check), report = Percentiles(nanoseconds: continuedReport)
        if json {
            return jsonLine(JSONFigures(procCheckP50: Rounded(check.p50), procCheckP99: Rounded(check.p99),
                                        continuedReportP50: Rounded(report.p50), continuedReportP99: Rounded(report.p99)))
        }
        return "stop witness (SIGSTOP side, \(Self.checks) checks of a stopped process): /proc state + schedstat p50 \(fixed(check.p50)) us p99 \(fixed(check.p99)) us"
            + " | waitid(WCONTINUED) p50 \(fixed(report.p50)) us p99 \(fixed(report.p99)) us"
    }

    private struct JSONFigures: Encodable {
        let test = "stop_witness"
        let checks = StopWitnessFigures.checks
        var procCheckP50, procCheckP99, continuedReportP50, continuedReportP99: Rounded

        enum CodingKeys: String, CodingKey {
            case test, checks
            case procCheckP50 = "proc_check_p50_us", procCheckP99 = "proc_check_p99_us"
            case continuedReportP50 = "continued_report_p50_us", continuedReportP99 = "continued_report_p99_us"
        }
    }
}
