import Glibc
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// `voipd-bench startup`: how long voipd takes from being spawned to READY=1 and what it
/// holds in memory then, beside s6-fdholderd (spawned → its readiness newline); and voipctl
/// asking a running voipd for its status, beside s6-fdholder-list asking s6-fdholderd for
/// its list: spawned → exited, and the peak resident memory.
enum StartupBenchmark {
    struct Options: SubcommandOptions {
        var runs = 20
        var cpu: Int? = 0
        var voipd: String?
        var voipctl: String?
        var json = false

        static let usage = """
        usage: voipd-bench startup [--runs N] [--cpu N|any] [--voipd PATH] [--voipctl PATH] [--json]

        Start-up and memory at start, medians of N alternating runs (default 20), everything on
        CPU N (default 0; `any`: the scheduler's choice):
          voipd          spawned → READY=1 on its notify socket; VmRSS then (voipd goes on
                         with what follows READY=1 meanwhile, so this reads somewhere between
                         READY=1 and the end of its start, as the scheduler has it)
          voipd started  VmRSS once its start is over: blocked in epoll_wait for the first time
                         (/proc/PID/wchan, read every 100 µs); its transfer service is not up
                         (no task in its store: it comes up at the first transfer request)
          s6-fdholderd   `s6-fdholder-daemon -1`: spawned → its readiness newline; VmRSS then
          voipctl        `voipctl --socket S status` against a running voipd: spawned → exited; peak
                         RSS (run again under GNU time, /usr/bin/time)
          s6-fdholder-list  the same against a running s6-fdholderd
          voipd again    VmRSS after it has served those N status requests
        Measure the programs as installed: as Deploy/build-release.sh builds them for the
        package (--voipd, --voipctl; `$(Deploy/build-release.sh)/voipd`); by default the voipd
        built beside this bench and the voipctl next to it.
        """

        mutating func read(_ flag: String, from reader: inout OptionReader) throws {
            switch flag {
            case "--runs": runs = try reader.integer(flag, in: 1...1000)
            case "--cpu":
                let text = try reader.value(flag)
                guard text == "any" || Int(text) != nil else { throw UsageError(description: "--cpu needs a CPU number or any") }
                cpu = Int(text)
            case "--voipd": voipd = try reader.value(flag)
            case "--voipctl": voipctl = try reader.value(flag)
            case "--json": json = true
            default: throw OptionReader.unknown(flag)
            }
        }
    }

    static func main(_ arguments: [String]) -> Int32 {
        runSubcommand("startup", arguments: arguments, run: run)
    }

    /// One program's samples: time in µs, memory in KiB.
    struct Samples {
        var microseconds: [Double] = []
        var kilobytes: [Double] = []
    }

    private static func run(_ options: Options) throws {
        let voipd = try options.voipd ?? BenchPaths.buildVoipd()
        let voipctl = options.voipctl ?? parentDirectory(voipd) + "/voipctl"
        guard access(voipctl, X_OK) == 0 else { throw BenchError("no voipctl at \(voipctl): build it or pass --voipctl PATH") }
        let s6 = S6FdholderUnderTest.unavailableReason
        if let s6 { progress("s6-fdholderd not measured: \(s6)") }
        try pinCurrentThread(to: options.cpu)
        progress("load average \(WakeBenchmark.loadAverage())")
        var daemon = Samples(), holder = Samples(), client = Samples(), lister = Samples()
        var startedKB: [Double] = []
        for _ in 0..<options.runs {
            let directory = try TemporaryDirectory("voipd-bench")
            let started = try DaemonUnderTest(binary: voipd, directory: directory.path, guarded: false, memoryPressureTrigger: true)
            daemon.microseconds.append(Double(started.startNanoseconds) / 1000)
            daemon.kilobytes.append(Double(residentKilobytes(started.pid)))
            try waitUntilWaitingForEvents(started.pid)
            startedKB.append(Double(residentKilobytes(started.pid)))
            started.stop()
            if s6 == nil {
                let started = try S6FdholderUnderTest(directory: directory.path, guarded: false)
                holder.microseconds.append(Double(started.startNanoseconds) / 1000)
                holder.kilobytes.append(Double(residentKilobytes(started.pid)))
                started.stop()
            }
        }
        let directory = try TemporaryDirectory("voipd-bench")
        let running = try DaemonUnderTest(binary: voipd, directory: directory.path, memoryPressureTrigger: true)
        defer { running.stop() }
        let runningHolder = s6 == nil ? try S6FdholderUnderTest(directory: directory.path) : nil
        defer { runningHolder?.stop() }
        for _ in 0..<options.runs {
            let (time, peak) = try timedRun([voipctl, "--socket", running.socketPath, "status"], directory: directory.path)
            client.microseconds.append(time)
            client.kilobytes.append(peak)
            if let runningHolder {
                let (time, peak) = try timedRun(["/usr/bin/s6-fdholder-list", runningHolder.socketPath], directory: directory.path)
                lister.microseconds.append(time)
                lister.kilobytes.append(peak)
            }
        }
        let servedKB = Double(residentKilobytes(running.pid))
        report("voipd", daemon, against: "s6-fdholderd", holder, what: "start → ready", memory: "RSS at ready", json: options.json)
        report("voipctl status", client, against: "s6-fdholder-list", lister, what: "spawned → exited", memory: "peak RSS", json: options.json)
        if options.json {
            FreezeBenchmark.emit(jsonLine(StartedFigures(rssKB: Rounded(median(startedKB), 0), minimumRSSKB: Rounded(startedKB.min() ?? .nan, 0),
                                                         maximumRSSKB: Rounded(startedKB.max() ?? .nan, 0))))
            FreezeBenchmark.emit(jsonLine(ServedFigures(requests: options.runs, rssKB: Rounded(servedKB, 0))))
        } else {
            FreezeBenchmark.emit("voipd started (waiting for its first request): RSS p50 "
                + "\(fixed(median(startedKB) / 1024, 2)) MiB (min \(fixed((startedKB.min() ?? .nan) / 1024, 2)), "
                + "max \(fixed((startedKB.max() ?? .nan) / 1024, 2)))")
            FreezeBenchmark.emit("voipd after \(options.runs) status requests: RSS \(fixed(servedKB / 1024, 1)) MiB")
        }
        progress("done; load average \(WakeBenchmark.loadAverage())")
    }

    private static func report(_ name: String, _ ours: Samples, against other: String, _ theirs: Samples, what: String, memory: String, json: Bool) {
        let time = median(ours.microseconds), kb = median(ours.kilobytes)
        let theirTime = median(theirs.microseconds), theirKB = median(theirs.kilobytes)
        if json {
            FreezeBenchmark.emit(jsonLine(ProgramFigures(
                program: name, runs: ours.microseconds.count, microseconds: Rounded(time, 0), rssKB: Rounded(kb, 0),
                minimumMicroseconds: Rounded(ours.microseconds.min() ?? .nan, 0), other: other, otherMicroseconds: Rounded(theirTime, 0),
                otherRSSKB: Rounded(theirKB, 0), otherMinimumMicroseconds: Rounded(theirs.microseconds.min() ?? .nan, 0),
                ratio: Rounded(time / theirTime, 2))))
        } else {
            FreezeBenchmark.emit("\(name): \(what) p50 \(fixed(time / 1000, 2)) ms (min \(fixed((ours.microseconds.min() ?? .nan) / 1000, 2))), "
                + "\(memory) \(fixed(kb / 1024, 1)) MiB | \(other): p50 \(fixed(theirTime / 1000, 2)) ms "
                + "(min \(fixed((theirs.microseconds.min() ?? .nan) / 1000, 2))), \(fixed(theirKB / 1024, 1)) MiB | ratio \(fixed(time / theirTime, 2))")
        }
    }

    /// One program beside the other it is compared with: medians of time (µs) and memory (KiB).
    private struct ProgramFigures: Encodable {
        let test = "startup"
        var program: String
        var runs: Int
        var microseconds, rssKB, minimumMicroseconds: Rounded
        var other: String
        var otherMicroseconds, otherRSSKB, otherMinimumMicroseconds, ratio: Rounded

        enum CodingKeys: String, CodingKey {
            case test, program, runs, other, ratio
            case microseconds = "us", rssKB = "rss_kb", minimumMicroseconds = "us_min"
            case otherMicroseconds = "other_us", otherRSSKB = "other_rss_kb", otherMinimumMicroseconds = "other_us_min"
        }
    }

    /// voipd's memory once its start is over, before any request.
    private struct StartedFigures: Encodable {
        let test = "startup"
        let program = "voipd started"
        var rssKB, minimumRSSKB, maximumRSSKB: Rounded

        enum CodingKeys: String, CodingKey {
            case test, program
            case rssKB = "rss_kb", minimumRSSKB = "rss_kb_min", maximumRSSKB = "rss_kb_max"
        }
    }

    /// voipd's memory once it has served the status requests.
    private struct ServedFigures: Encodable {
        let test = "startup"
        let program = "voipd served"
        var requests: Int
        var rssKB: Rounded

        enum CodingKeys: String, CodingKey {
            case test, program, requests
            case rssKB = "rss_kb"
        }
    }

    /// Runs a command to its end, output discarded: µs from spawn to exit; then again under
    /// GNU time for its peak RSS in KiB (a child of this bench would count the bench's own
    /// memory, which it shares until it executes: time's child starts from time's ~1 MiB).
    private static func timedRun(_ command: [String], directory: String) throws -> (Double, Double) {
        let started = MonotonicInstant.now
        try runQuietly(command)
        let elapsed = Double(MonotonicInstant.now.nanoseconds - started.nanoseconds) / 1000
        let report = directory + "/time.out"
        try runQuietly(["/usr/bin/time", "-f", "%M", "-o", report] + command)
        guard let peak = Double((ProcFS.read(report) ?? "").split(separator: "\n").last ?? "") else {
            throw BenchError("no peak RSS from /usr/bin/time for \(command.joined(separator: " "))")
        }
        return (elapsed, peak)
    }

    private static func runQuietly(_ command: [String]) throws {
        let null = try openFile("/dev/null", flags: O_WRONLY)
        let pid = try spawnProcess(SpawnRequest(arguments: command, environment: currentEnvironment(), standardOutput: null.rawValue))
        let status = try PidFd(pid: pid).waitForExit()
        guard status == .exited(0) else { throw BenchError("\(command.joined(separator: " ")) failed: \(status)") }
    }

    /// Returns once `pid` is blocked in `epoll_wait` (its loop waiting for the first event:
    /// what follows READY=1 in its start is done). Nothing tells the bench that moment, so it
    /// reads /proc/PID/wchan (where the kernel has it sleep) every 100 µs, for 10 s at most.
    private static func waitUntilWaitingForEvents(_ pid: pid_t) throws {
        let deadline = MonotonicInstant.now + .seconds(10)
        while MonotonicInstant.now < deadline {
            if ProcFS.read("/proc/\(pid)/wchan") == "do_epoll_wait" { return }
            var pause = timespec(tv_sec: 0, tv_nsec: 100_000)
            nanosleep(&pause, nil)
        }
        throw BenchError("voipd \(pid) did not wait in epoll_wait within 10 s of READY=1")
    }

    /// VmRSS of a running process, in KiB.
    static func residentKilobytes(_ pid: pid_t) -> Int {
        let status = ProcFS.read("/proc/\(pid)/status") ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
}
