import Glibc
import SIP
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// `voipd-bench sip`: INVITE → 180 Ringing at the caller with the softphone running and
/// suspended under voipd, through each registrar, beside the wake floor of the same run.
enum SIPBenchmark {
    static func main(_ arguments: [String]) -> Int32 {
        runSubcommand("sip", arguments: arguments, run: run)
    }

    private static func run(_ options: SIPOptions) throws {
        let voipd = try options.voipd ?? BenchPaths.buildVoipd()
        // Built with the bench: it is one of its dependencies.
        let softphone = options.softphone ?? parentDirectory(BenchPaths.executable) + "/softphone"
        if options.callees.contains(.softphone), access(softphone, X_OK) != 0 {
            throw BenchError("no softphone at \(softphone): build it or pass --softphone PATH")
        }
        var callees = options.callees
        if callees.contains(.baresip), access(options.baresip, X_OK) != 0 {
            progress("baresip skipped: \(options.baresip) is not installed (apt-get install baresip-core, or pass --baresip PATH)")
            callees.removeAll { $0 == .baresip }
        }
        let directory = try TemporaryDirectory("voipd-bench")
        let floor = try WakeFloor.build(shared: options.shared, into: directory.path)
        let setting = SIPSetting(options: options, voipd: voipd, softphone: softphone, floor: floor, directory: directory.path)
        progress("\(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPUs, load average \(WakeBenchmark.loadAverage())")
        for placement in options.placements {
            var registrars = options.registrars
            if registrars.contains(.kamailio), access(options.kamailio, X_OK) != 0 {
                let reason = "\(options.kamailio) is not installed (apt-get install kamailio, or pass --kamailio PATH)"
                progress("kamailio skipped: \(reason)")
                emit(SIPResult.skipped(.kamailio, placement: placement, reason: reason, json: options.json))
                registrars.removeAll { $0 == .kamailio }
            }
            if callees.contains(.softphone) {
                let results = try measure(registrars, placement: placement, options: options) {
                    try SIPMeasurement(registrar: $0, placement: placement, setting: setting).run()
                }
                results.forEach { emit(options.json ? $0.json : $0.line) }
            }
            if callees.contains(.baresip) {
                let results = try measure(registrars, placement: placement, options: options) {
                    try BaresipMeasurement(registrar: $0, placement: placement, setting: setting).run()
                }
                results.forEach { emit(options.json ? $0.json : $0.line) }
            }
        }
        progress("done; load average \(WakeBenchmark.loadAverage())")
    }

    /// Run after run, each registrar in turn, so that drift falls on all of them alike.
    private static func measure<Run: SIPRunFigures>(_ registrars: [SIPOptions.Registrar], placement: CPUPlacement, options: SIPOptions,
                                                    measurement: (SIPOptions.Registrar) throws -> Run) throws -> [SIPResults<Run>] {
        var results = registrars.map {
            SIPResults<Run>(registrar: $0, placement: placement, calls: options.calls, warmUp: options.warmUpCalls, floorWakes: options.floorWakes)
        }
        let runs = try runInTurn(results.map(\.label), runs: options.runs, line: \Run.line) { try measurement(registrars[$0]) }
        for index in results.indices { results[index].runs = runs[index] }
        return results
    }

    /// `runs` rounds of one measurement per label, in turn; each label's figures.
    private static func runInTurn<Figures>(_ labels: [String], runs: Int, line: KeyPath<Figures, String>,
                                           measure: (Int) throws -> Figures) throws -> [[Figures]] {
        var figures = labels.map { _ in [Figures]() }
        for run in 1...runs {
            for index in labels.indices {
                let one = try measure(index)
                figures[index].append(one)
                progress("run \(run)/\(runs) \(labels[index]): \(one[keyPath: line])")
            }
        }
        return figures
    }

    private static func emit(_ line: String) {
        print(line)
        fflush(nil)
    }
}
