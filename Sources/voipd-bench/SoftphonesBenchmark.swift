import Foundation
import Glibc
import VoipdAdoption
import VoipdTestSupport
import VoipdSystem
import VoipdVocabulary

/// `voipd-bench softphones`: what unmodified softphones cost when nobody suspends them, idle
/// and registered and in a call, and what adopting them costs voipd (a discovery, an
/// activity sample). The figures the quiet detector's defaults come from (issue 15,
/// docs/BENCHMARKS.md "Unmodified softphones, idle").
enum SoftphonesBenchmark {
    struct Options {
        var idleSeconds = 60
        var callSeconds = 20
        var repetitions = 200
        var phones = Phone.allCases
        var kamailio = "/usr/sbin/kamailio"
        var json = false

        static let usage = """
        usage: voipd-bench softphones [--idle-seconds S] [--call-seconds S] [--repetitions N]
                                      [--phones LIST] [--kamailio PATH] [--json]

        Runs Kamailio and unmodified softphones in a private network namespace (needs root,
        unshare, nsenter and ip) and measures each phone's process tree, from its threads'
        scheduler statistics: wake-ups and CPU time per minute while registered and idle, then
        per second in a call (a second baresip calls it; it answers by itself). Then what
        adopting it costs voipd: a socket discovery (netlink, and /proc/PID/net) and an
        activity sample, timed over many repetitions (medians).

          --idle-seconds S   the idle measurement (default 60)
          --call-seconds S   the in-call measurement (default 20)
          --repetitions N    discoveries and samples timed (default 200)
          --phones LIST      baresip-tcp, baresip-udp, linphonec (default all)
          --kamailio PATH    the Kamailio binary (default /usr/sbin/kamailio)
          --json             one JSON object per phone
        """

        static func parse(_ arguments: [String]) throws -> Options {
            try OptionReader.parse(arguments, into: Options()) { flag, reader, options in
                switch flag {
                case "--idle-seconds": options.idleSeconds = try reader.integer(flag, in: 1...3600)
                case "--call-seconds": options.callSeconds = try reader.integer(flag, in: 1...3600)
                case "--repetitions": options.repetitions = try reader.integer(flag, in: 1...100_000)
                case "--phones": options.phones = try reader.list(flag) { Phone(rawValue: $0) }
                case "--kamailio": options.kamailio = try reader.value(flag)
                case "--json": options.json = true
                default: return false
                }
                return true
            }
        }
    }

    enum Phone: String, CaseIterable {
        case baresipTCP = "baresip-tcp", baresipUDP = "baresip-udp", linphonec
    }

    struct Figures: Encodable {
        var phone: String
        var idleSeconds: Double
        var idleWakeupsPerMinute: Double
        var idleCPUMillisecondsPerMinute: Double
        var callSeconds: Double
        var callWakeupsPerSecond: Double
        var callCPUMillisecondsPerSecond: Double
        var threadsIdle: Int
        var threadsInCall: Int
        var socketsIdle: Int
        var adoptedBySIP: Int
        var processTreeMicroseconds: Double
        var discoveryNetlinkMicroseconds: Double
        var discoveryProcNetMicroseconds: Double
        var activitySampleMicroseconds: Double
    }

    static func main(_ arguments: [String]) -> Int32 {
        runSubcommand("softphones", usage: Options.usage, arguments: arguments, parse: Options.parse) { options in
            for tool in ["/usr/bin/unshare", "/usr/bin/nsenter", "/usr/sbin/ip", options.kamailio] where access(tool, X_OK) != 0 {
                throw BenchError("\(tool) is missing")
            }
            guard geteuid() == 0 else { throw BenchError("a network namespace needs root") }
            // The common case first: a program in voipd's own network namespace (the bench
            // itself, before it has children, with a TCP listener and a UDP socket).
            let listener = try Socket.listenTCP()
            let datagrams = try Socket.make(domain: AF_INET, type: Socket.datagramType)
            let own = try median(options.repetitions) { _ = try SocketDiscovery.discover(root: getpid()) }.get()
            try listener.close()
            try datagrams.close()
            // Where that time goes: one whole dump of each table.
            var dumps: [String: Double] = [:]
            for transport in NetworkSocket.Transport.allCases {
                for (family, name) in [(AF_INET, "4"), (AF_INET6, "6")] {
                    dumps[transport.rawValue + name] = try median(options.repetitions) {
                        try SocketDiagnostics().dump(family: family, transport: transport, states: UInt32.max, limit: 1 << 20) { _ in true }
                    }.get()
                }
            }
            if options.json {
                let tables = dumps.keys.sorted().map { "\"\($0)\":\(dumps[$0]!)" }.joined(separator: ",")
                print(#"{"ownNamespaceDiscoveryMicroseconds":\#(own),"tableDumpMicroseconds":{\#(tables)}}"#)
            } else {
                let tables = dumps.keys.sorted().map { "\($0) \(String(format: "%.1f", dumps[$0]!))" }.joined(separator: ", ")
                print("a process with 2 sockets in voipd's own network namespace: discovery \(String(format: "%.1f", own)) µs; "
                      + "a whole table dump (µs): \(tables) (medians)")
            }
            for phone in options.phones {
                let figures = try measure(phone, options)
                if options.json {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = .sortedKeys
                    print(String(decoding: try encoder.encode(figures), as: UTF8.self))
                } else {
                    report(figures)
                }
            }
        }
    }

    private static func measure(_ phone: Phone, _ options: Options) throws -> Figures {
        let network = try SoftphoneNamespace()
        defer { network.stop() }
        try startKamailio(in: network, binary: options.kamailio)
        progress("\(phone.rawValue): starting and registering")
        let pid: pid_t
        let dial: String
        // linphonec's standard input, held open until the measurements end.
        var input: DescriptorBox?
        switch phone {
        case .baresipTCP, .baresipUDP:
            pid = try startBaresip(in: network, name: "callee", sipPort: 5070, user: "alice", transport: phone == .baresipTCP ? "tcp" : "udp")
            dial = "sip:alice@127.0.0.1"
        case .linphonec:
            (pid, input) = try startLinphonec(in: network, sipPort: 5070)
            dial = "sip:carol@127.0.0.1"
        }
        let idleDiscovery = try SocketDiscovery.discover(root: pid)
        let sockets = idleDiscovery.sockets.map(\.socket)
        let adopted = try AdoptionPolicy(parsing: ["sip:port=5070"]).apply(to: sockets).adopted.count

        progress("\(phone.rawValue): idle for \(options.idleSeconds) s")
        let idle = try activity(of: pid, over: .seconds(options.idleSeconds))
        let tree = median(options.repetitions) { _ = try ProcessTree.below(pid, limit: 256) }
        let netlink = median(options.repetitions) { _ = try SocketDiscovery.discover(root: pid) }
        let procNet = median(options.repetitions) { _ = try SocketDiscovery.discover(root: pid, netlink: false) }
        let sample = median(options.repetitions) { _ = ProcFS.activity(of: [pid]) }

        progress("\(phone.rawValue): in a call for \(options.callSeconds) s")
        let caller = try startBaresip(in: network, name: "caller", sipPort: 5080, user: "bob", transport: "udp", dial: dial)
        let call = try activity(of: pid, over: .seconds(options.callSeconds))
        network.stop(caller)
        withExtendedLifetime(input) {}

        return Figures(phone: phone.rawValue, idleSeconds: idle.activity.interval.seconds,
                       idleWakeupsPerMinute: idle.activity.runsPerSecond * 60,
                       idleCPUMillisecondsPerMinute: idle.activity.cpuPerSecond.seconds * 60_000,
                       callSeconds: call.activity.interval.seconds, callWakeupsPerSecond: call.activity.runsPerSecond,
                       callCPUMillisecondsPerSecond: call.activity.cpuPerSecond.seconds * 1000,
                       threadsIdle: idle.threads, threadsInCall: call.threads, socketsIdle: sockets.count, adoptedBySIP: adopted,
                       processTreeMicroseconds: try tree.get(), discoveryNetlinkMicroseconds: try netlink.get(), discoveryProcNetMicroseconds: try procNet.get(),
                       activitySampleMicroseconds: try sample.get())
    }

    private static func report(_ figures: Figures) {
        func fixed(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
        print("""
        \(figures.phone): idle and registered over \(fixed(figures.idleSeconds)) s: \(fixed(figures.idleWakeupsPerMinute)) wake-ups/min, \
        \(fixed(figures.idleCPUMillisecondsPerMinute)) ms CPU/min (\(figures.threadsIdle) threads)
          in a call over \(fixed(figures.callSeconds)) s: \(fixed(figures.callWakeupsPerSecond)) wake-ups/s, \
        \(fixed(figures.callCPUMillisecondsPerSecond, 2)) ms CPU/s (\(figures.threadsInCall) threads)
          sockets: \(figures.socketsIdle), \(figures.adoptedBySIP) taken by sip:port=5070
          voipd's side (medians): discovery \(fixed(figures.discoveryNetlinkMicroseconds)) µs by netlink, \
        \(fixed(figures.discoveryProcNetMicroseconds)) µs by /proc/PID/net, of which the process tree \
        \(fixed(figures.processTreeMicroseconds)) µs; activity sample \(fixed(figures.activitySampleMicroseconds)) µs
        """)
    }

    /// The tree's activity over `duration`, from two samples; and its threads at the end.
    private static func activity(of pid: pid_t, over duration: Duration) throws -> (activity: Activity, threads: Int) {
        let first = ProcFS.activity(of: try ProcessTree.below(pid, limit: 64).processes)
        let end = first.instant + duration
        // Waiting is the measurement: the bench sleeps, the phone runs.
        while MonotonicInstant.now < end { _ = poll(nil, 0, pollTimeout(until: end)) }
        let last = ProcFS.activity(of: try ProcessTree.below(pid, limit: 64).processes)
        return (last.since(first), last.threads.count)
    }

    /// The median time of `body` in microseconds, over `count` runs.
    private static func median(_ count: Int, _ body: () throws -> Void) -> Result<Double, any Error> {
        Result {
            var times: [Double] = []
            for _ in 0..<count {
                let start = MonotonicInstant.now
                try body()
                times.append((MonotonicInstant.now - start).seconds * 1e6)
            }
            return times.sorted()[times.count / 2]
        }
    }

    private static func startKamailio(in network: SoftphoneNamespace, binary: String) throws {
        let run = network.directory + "/kamailio"
        mkdir(run, 0o755)
        let configuration = packageDirectory + "/Deploy/kamailio/kamailio.cfg"
        try network.start([binary, "-f", configuration, "-A", "SIP_PORT=5060", "-l", "udp:127.0.0.1:5060", "-l", "tcp:127.0.0.1:5060",
                           "-DD", "-E", "-Y", run, "-P", run + "/kamailio.pid", "-w", run, "-m", "64", "-M", "8"], log: "kamailio.log")
        try network.waitForLog("kamailio.log", containing: "voipd: kamailio ready", timeout: .seconds(15))
    }

    /// baresip as the tests run it (aubridge audio, answering by itself); `dial`: call at start.
    private static func startBaresip(in network: SoftphoneNamespace, name: String, sipPort: UInt16, user: String, transport: String,
                                     dial: String? = nil) throws -> pid_t {
        let directory = network.directory + "/" + name
        mkdir(directory, 0o755)
        try writeTextFile(SoftphoneConfiguration.baresip(address: SoftphoneNamespace.address, sipPort: sipPort), to: directory + "/config")
        try writeTextFile(SoftphoneConfiguration.baresipAccount(user: user, registrar: "127.0.0.1", transport: transport), to: directory + "/accounts")
        let pid = try network.start(["/usr/bin/baresip", "-f", directory] + (dial.map { ["-e", "/dial \($0)"] } ?? []), log: name + ".log")
        try network.waitForLog(name + ".log", containing: dial == nil ? "200 OK" : "Call established", timeout: .seconds(15))
        return pid
    }

    /// linphonec as the tests run it (UDP only, answering by itself), registered as carol.
    private static func startLinphonec(in network: SoftphoneNamespace, sipPort: UInt16) throws -> (pid_t, DescriptorBox) {
        let home = network.directory + "/linphone"
        for part in ["", "/.local", "/.local/share", "/.local/share/linphone"] { mkdir(home + part, 0o755) }
        try writeTextFile(SoftphoneConfiguration.linphonerc(sipPort: sipPort, registrarPort: 5060, user: "carol"), to: home + "/linphonerc")
        // Its commands come from standard input: a pipe that stays open and silent.
        let pipe = try makePipe()
        let readEnd = pipe.first
        let writeEnd = pipe.second
        let pid = try network.start(["/usr/bin/linphonec", "-c", home + "/linphonerc", "-a", "-d", "4", "-l", network.path("linphonec.log")],
                                    log: "linphonec.out", environment: currentEnvironment().filter { !$0.hasPrefix("HOME=") } + ["HOME=\(home)"],
                                    input: readEnd.rawValue)
        let input = DescriptorBox(writeEnd)
        try network.waitForLog("linphonec.log", containing: "LinphoneRegistrationOk", timeout: .seconds(30))
        return (pid, input)
    }
}
