import Foundation
import Glibc
import VoipClient
import VoipdTestSupport
import VoipdSystem
import VoipdVocabulary

/// `voipd-bench idle-cost`: what an unmodified softphone costs idle and registered, once
/// unsupervised and once adopted by voipd and suspended (issue 15, docs/BENCHMARKS.md
/// "What adoption saves"): its process tree's wake-ups and CPU time per minute, the part
/// spent in keep-alive resumes, and voipd's own cost over the same time.
enum IdleCostBenchmark {
    struct Options: SubcommandOptions {
        var phone = SoftphonesBenchmark.Phone.linphonec
        var unsupervisedSeconds = 60
        var adoptedSeconds = 180
        var keepAliveSeconds = 60
        var projectedKeepAliveSeconds = 600
        var kamailio = "/usr/sbin/kamailio"
        var voipd: String?
        var json = false

        static let usage = """
        usage: voipd-bench idle-cost [--program PHONE] [--unsupervised-seconds S] [--adopted-seconds S]
                                     [--keep-alive S] [--project-keep-alive S] [--voipd PATH]
                                     [--kamailio PATH] [--json]

        Runs Kamailio and an unmodified softphone in a private network namespace (needs root,
        unshare, nsenter and ip), registered and idle, and measures its process tree from its
        threads' scheduler statistics (/proc/PID/task/TID/schedstat: CPU time, and times put
        on a CPU): first unsupervised, then launched by a fresh voipd from a manifest that
        adopts its SIP socket (`sip:port=5070`), sent to the background and suspended once
        measured quiet. Adopted, it is sampled every second and at each of its transitions: a
        step where it was stopped at both ends with no transition between counts as
        suspended, any other as a keep-alive resume's (every --keep-alive seconds voipd
        resumes it so that its own timers re-register). voipd's own threads are measured
        over the same time.

          --program PHONE          linphonec, baresip-udp or baresip-tcp (default linphonec)
          --unsupervised-seconds S the unsupervised measurement (default 60)
          --adopted-seconds S      the adopted measurement, from its first suspension (default 180)
          --keep-alive S           the adopted phone's keep-alive interval, from 60 (default 60)
          --project-keep-alive S   the figures per minute projected at this keep-alive (default
                                   600, voipd's keepAliveMinimum)
          --voipd PATH             the voipd binary (default: built next to this executable)
          --kamailio PATH          the Kamailio binary (default /usr/sbin/kamailio)
          --json                   one JSON object
        """

        mutating func read(_ flag: String, from reader: inout OptionReader) throws {
            switch flag {
            case "--program":
                let name = try reader.value(flag)
                guard let phone = SoftphonesBenchmark.Phone(rawValue: name) else {
                    throw UsageError(description: "--program: \(name) is not linphonec, baresip-udp or baresip-tcp")
                }
                self.phone = phone
            case "--unsupervised-seconds": unsupervisedSeconds = try reader.integer(flag, in: 1...3600)
            case "--adopted-seconds": adoptedSeconds = try reader.integer(flag, in: 1...7200)
            case "--keep-alive": keepAliveSeconds = try reader.integer(flag, in: 60...86_400)
            case "--project-keep-alive": projectedKeepAliveSeconds = try reader.integer(flag, in: 60...86_400)
            case "--voipd": voipd = try reader.value(flag)
            case "--kamailio": kamailio = try reader.value(flag)
            case "--json": json = true
            default: throw OptionReader.unknown(flag)
            }
        }
    }

    struct Figures: Encodable {
        var program: String
        var loadAverageAtStart: String
        var loadAverageAtEnd: String
        var unsupervisedSeconds: Double
        var unsupervisedWakeupsPerMinute: Double
        var unsupervisedCPUMillisecondsPerMinute: Double
        var adoptedSeconds: Double
        var adoptedWakeupsPerMinute: Double
        var adoptedCPUMillisecondsPerMinute: Double
        var suspendedSeconds: Double
        var suspendedWakeups: UInt64
        var suspendedCPUMilliseconds: Double
        var keepAliveSeconds: Int
        var keepAliveResumes: Int
        var wakeupsPerResume: Double
        var cpuMillisecondsPerResume: Double
        var secondsPerResume: Double
        var projectedKeepAliveSeconds: Int
        var projectedWakeupsPerMinute: Double
        var projectedCPUMillisecondsPerMinute: Double
        var voipdWakeupsPerMinute: Double
        var voipdCPUMillisecondsPerMinute: Double
    }

    static func main(_ arguments: [String]) -> Int32 {
        runSubcommand("idle-cost", arguments: arguments) { (options: Options) in
            try SoftphonesBenchmark.checkTools(kamailio: options.kamailio)
            let voipd = try options.voipd ?? BenchPaths.buildVoipd()
            try printFigures(try measure(options, voipd: voipd), json: options.json, report: report)
        }
    }

    /// How the phone is run in the network when voipd launches it: its command line and
    /// environment, and which log of the network's directory says it has registered.
    private struct PhoneSetup {
        var arguments: [String]
        var environment: [String: String] = [:]
        var readyLog: String
        var readyText: String
    }

    private static func adoptedSetup(_ phone: SoftphonesBenchmark.Phone, in network: PrivateNetwork, output: String) throws -> PhoneSetup {
        switch phone {
        case .linphonec:
            let (arguments, home) = try Linphonec.prepare(in: network, sipPort: 5070, registrarPort: 5060, user: "carol")
            return PhoneSetup(arguments: arguments, environment: ["HOME": home], readyLog: Linphonec.log, readyText: "LinphoneRegistrationOk")
        case .baresipTCP, .baresipUDP:
            let arguments = try Baresip.prepare(in: network, name: phone.rawValue, sipPort: 5070, user: "alice",
                                                transport: phone == .baresipTCP ? "tcp" : "udp", control: false)
            return PhoneSetup(arguments: arguments, readyLog: output, readyText: "200 OK")
        }
    }

    /// Starts the phone in the network, unsupervised, registered; stop it with the network.
    private static func startUnsupervised(_ phone: SoftphonesBenchmark.Phone, in network: PrivateNetwork) throws -> (TestProcess, Linphonec?) {
        switch phone {
        case .linphonec:
            let linphonec = try Linphonec(in: network, sipPort: 5070, registrarPort: 5060, user: "carol")
            return (linphonec.process, linphonec)
        case .baresipTCP, .baresipUDP:
            let baresip = try Baresip(in: network, name: phone.rawValue, sipPort: 5070, user: "alice",
                                      transport: phone == .baresipTCP ? "tcp" : "udp", control: false)
            return (baresip.process, nil)
        }
    }

    private static func measure(_ options: Options, voipd voipdBinary: String) throws -> Figures {
        let loadAtStart = loadAverage()
        // Through the guard: a bench that dies leaves nothing behind.
        let network = try PrivateNetwork(defaultRoute: true, wrap: GuardedExec.wrap)
        defer { network.stop() }
        try NamespacedKamailio.start(in: network, binary: options.kamailio, port: 5060)
        let name = options.phone.rawValue

        progress("\(name): unsupervised, idle and registered for \(options.unsupervisedSeconds) s")
        let (process, linphonec) = try startUnsupervised(options.phone, in: network)
        let unsupervised = try SoftphonesBenchmark.activity(of: process.pid, over: .seconds(options.unsupervisedSeconds)).activity
        network.stop(process)
        withExtendedLifetime(linphonec) {}

        let adopted = try measureAdopted(options, network: network, voipd: voipdBinary)
        let perMinute = { (value: Double, interval: Duration) in interval > .zero ? value * 60 / interval.seconds : 0 }
        let resumes = max(adopted.resumes, 1)
        let wakeupsPerResume = Double(adopted.resumed.runs) / Double(resumes)
        let cpuPerResume = adopted.resumed.cpuTime.seconds * 1000 / Double(resumes)
        let suspendedRate = adopted.suspended.interval > .zero ? Double(adopted.suspended.runs) / adopted.suspended.interval.seconds : 0
        let suspendedCPURate = adopted.suspended.interval > .zero ? adopted.suspended.cpuTime.seconds / adopted.suspended.interval.seconds : 0
        let projection = Double(options.projectedKeepAliveSeconds)
        let total = adopted.suspended.interval + adopted.resumed.interval
        return Figures(program: name, loadAverageAtStart: loadAtStart, loadAverageAtEnd: loadAverage(),
                       unsupervisedSeconds: unsupervised.interval.seconds,
                       unsupervisedWakeupsPerMinute: perMinute(Double(unsupervised.runs), unsupervised.interval),
                       unsupervisedCPUMillisecondsPerMinute: perMinute(unsupervised.cpuTime.seconds * 1000, unsupervised.interval),
                       adoptedSeconds: total.seconds,
                       adoptedWakeupsPerMinute: perMinute(Double(adopted.suspended.runs + adopted.resumed.runs), total),
                       adoptedCPUMillisecondsPerMinute: perMinute((adopted.suspended.cpuTime + adopted.resumed.cpuTime).seconds * 1000, total),
                       suspendedSeconds: adopted.suspended.interval.seconds, suspendedWakeups: adopted.suspended.runs,
                       suspendedCPUMilliseconds: adopted.suspended.cpuTime.seconds * 1000,
                       keepAliveSeconds: options.keepAliveSeconds, keepAliveResumes: adopted.resumes,
                       wakeupsPerResume: wakeupsPerResume, cpuMillisecondsPerResume: cpuPerResume,
                       secondsPerResume: adopted.awakeSeconds / Double(resumes),
                       projectedKeepAliveSeconds: options.projectedKeepAliveSeconds,
                       projectedWakeupsPerMinute: wakeupsPerResume * 60 / projection + suspendedRate * 60,
                       projectedCPUMillisecondsPerMinute: cpuPerResume * 60 / projection + suspendedCPURate * 60_000,
                       voipdWakeupsPerMinute: perMinute(Double(adopted.voipd.runs), adopted.voipd.interval),
                       voipdCPUMillisecondsPerMinute: perMinute(adopted.voipd.cpuTime.seconds * 1000, adopted.voipd.interval))
    }

    private struct AdoptedActivity {
        var suspended = Activity(interval: .zero, runs: 0, cpuTime: .zero)
        var resumed = Activity(interval: .zero, runs: 0, cpuTime: .zero)
        var resumes = 0
        /// From each resume to the suspension after it, by voipd's transitions.
        var awakeSeconds = 0.0
        var voipd = Activity(interval: .zero, runs: 0, cpuTime: .zero)
    }

    /// The phone launched by a fresh voipd that adopts it, backgrounded, and from its first
    /// suspension on measured between each two of its transitions for `adoptedSeconds`.
    private static func measureAdopted(_ options: Options, network: PrivateNetwork, voipd voipdBinary: String) throws -> AdoptedActivity {
        let name = options.phone.rawValue
        let app = "phone"
        let directory = network.directory + "/voipd"
        mkdir(directory, 0o755)
        mkdir(directory + "/apps.d", 0o755)
        // Its standard input: a FIFO opened read-write here, so that it never ends (linphonec
        // quits at the end of its input) and opening it waits for nobody.
        let fifo = network.path(name + ".in")
        guard mkfifo(fifo, 0o600) == 0 else { throw Errno.current("mkfifo(\(fifo))") }
        let input = try openFile(fifo, flags: O_RDWR)
        let output = network.path(name + ".adopted.out")
        let setup = try adoptedSetup(options.phone, in: network, output: name + ".adopted.out")
        // linphonec idle wakes 100 times a second and 200 in a call; 150 tells them apart
        // (docs/BENCHMARKS.md, "Unmodified softphones, idle"). baresip is quiet at the defaults.
        var manifest: [String: Any] = [
            "command": "/bin/sh",
            "arguments": ["-c", "exec \"$@\" <\(fifo) >>\(output) 2>&1", "sh"] + network.entering(setup.arguments),
            "environment": setup.environment, "adopt": ["sip:port=5070"], "quietWindowSeconds": 2,
            "keepAliveMinimum": options.keepAliveSeconds, "keepAliveSeconds": options.keepAliveSeconds,
        ]
        if options.phone == .linphonec { manifest["quietWakeupsPerSecond"] = 150 }
        try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: directory + "/apps.d/\(app).json"))
        // The machine's memory pressure (other programs') would have voipd terminate the
        // background phone, as a phone would: not what is measured here.
        let daemon = try DaemonUnderTest(binary: voipdBinary, directory: directory, arguments: ["--no-memory-pressure-trigger"])
        defer { daemon.stop() }
        let control = try VoipdControl(socketPath: daemon.socketPath)
        let follower = try VoipdControl(socketPath: daemon.socketPath)
        _ = try follower.events(follow: true, to: [.background, .suspended, .terminated])
        guard let pid = try control.launchManifest(app).pid else { throw BenchError("voipd launched \(name) but reports no pid") }
        // voipd ends it when it stops; if the bench dies first, it must not stay stopped.
        defer {
            kill(pid, SIGCONT)
            kill(pid, SIGTERM)
        }
        try network.waitForLog(setup.readyLog, containing: setup.readyText, timeout: .seconds(30))
        _ = try control.command(.background, app)
        func next(_ deadline: MonotonicInstant) throws -> TransitionRecord? {
            while MonotonicInstant.now < deadline {
                guard let record = try follower.nextTransition(timeoutMilliseconds: pollTimeout(until: deadline)) else { return nil }
                guard record.app == app else { continue }
                if record.to == .terminated { throw BenchError("voipd terminated \(name): \(record.reason)\n\(daemon.log(tail: 20))") }
                return record
            }
            return nil
        }
        progress("\(name): adopted, waiting for its first suspension")
        let suspensionDeadline = MonotonicInstant.now + .seconds(60)
        while true {
            guard let record = try next(suspensionDeadline) else {
                throw BenchError("\(name) was not suspended within 60 s of going to the background; voipd's log:\n\(daemon.log(tail: 20))")
            }
            if record.to == .suspended { break }
        }
        let status = try control.app(app)
        guard let adoption = status.adoption, !adoption.adopted.isEmpty, adoption.warning == nil else {
            throw BenchError("\(name) is not adopted as expected: \(String(describing: status.adoption))")
        }
        progress("\(name): adopted and suspended (\(adoption.adopted.joined(separator: ", "))); measuring for \(options.adoptedSeconds) s")

        // Sampled every second and at each transition. A step counts as suspended when the
        // phone was stopped (kernel state T) at both ends and made no transition in between:
        // the bench learns of a resume only after voipd's SIGCONT, so the step before it
        // holds the phone's first moments awake.
        var result = AdoptedActivity()
        let voipdStart = ProcFS.activity(of: [daemon.pid])
        var sample = ProcFS.activity(of: try ProcessTree.below(pid, limit: 64).processes)
        var stopped = ProcFS.state(of: pid) == "T"
        // voipd's time of the resume in progress (its transitions' wall clock).
        var resumedAt: Double?
        let end = sample.instant + .seconds(options.adoptedSeconds)
        while MonotonicInstant.now < end {
            let record = try next(min(end, MonotonicInstant.now + .seconds(1)))
            let now = ProcFS.activity(of: try ProcessTree.below(pid, limit: 64).processes)
            let nowStopped = ProcFS.state(of: pid) == "T"
            let part = now.since(sample)
            if record == nil, stopped, nowStopped { result.suspended = result.suspended + part } else { result.resumed = result.resumed + part }
            (sample, stopped) = (now, nowStopped)
            guard let record else { continue }
            if record.to == .suspended {
                if let start = resumedAt { result.awakeSeconds += record.time - start }
                resumedAt = nil
            } else if resumedAt == nil {
                result.resumes += 1
                resumedAt = record.time
            }
        }
        result.voipd = ProcFS.activity(of: [daemon.pid]).since(voipdStart)
        withExtendedLifetime(input) {}
        return result
    }

    private static func report(_ figures: Figures) {
        func fixed(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
        print("""
        \(figures.program), idle and registered (load average \(figures.loadAverageAtStart) at the start, \(figures.loadAverageAtEnd) at the end):
          unsupervised over \(fixed(figures.unsupervisedSeconds)) s: \(fixed(figures.unsupervisedWakeupsPerMinute)) wake-ups/min, \
        \(fixed(figures.unsupervisedCPUMillisecondsPerMinute, 2)) ms CPU/min
          adopted over \(fixed(figures.adoptedSeconds)) s (keep-alive every \(figures.keepAliveSeconds) s): \
        \(fixed(figures.adoptedWakeupsPerMinute)) wake-ups/min, \(fixed(figures.adoptedCPUMillisecondsPerMinute, 2)) ms CPU/min
            stopped throughout \(fixed(figures.suspendedSeconds)) s: \(figures.suspendedWakeups) wake-ups, \(fixed(figures.suspendedCPUMilliseconds, 3)) ms CPU
            \(figures.keepAliveResumes) keep-alive resumes, \(fixed(figures.secondsPerResume, 2)) s each: \
        \(fixed(figures.wakeupsPerResume)) wake-ups, \(fixed(figures.cpuMillisecondsPerResume, 2)) ms CPU each
            at a keep-alive every \(figures.projectedKeepAliveSeconds) s: \(fixed(figures.projectedWakeupsPerMinute)) wake-ups/min, \
        \(fixed(figures.projectedCPUMillisecondsPerMinute, 2)) ms CPU/min
          voipd over the adopted measurement: \(fixed(figures.voipdWakeupsPerMinute)) wake-ups/min, \
        \(fixed(figures.voipdCPUMillisecondsPerMinute, 2)) ms CPU/min
        """)
    }

    /// /proc/loadavg's three averages.
    private static func loadAverage() -> String {
        (ProcFS.read("/proc/loadavg") ?? "").split(separator: " ").prefix(3).joined(separator: " ")
    }
}

extension Activity {
    /// Two activities end to end.
    static func + (lhs: Activity, rhs: Activity) -> Activity {
        Activity(interval: lhs.interval + rhs.interval, runs: lhs.runs + rhs.runs, cpuTime: lhs.cpuTime + rhs.cpuTime)
    }
}
