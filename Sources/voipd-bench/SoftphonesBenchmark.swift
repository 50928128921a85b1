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
    struct Options: SubcommandOptions {
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
        adopting it costs voipd: a socket discovery (netlink, /proc/PID/net, and copies of the
        descriptors as voipd does it) and an activity sample, timed over many repetitions (medians).

          --idle-seconds S   the idle measurement (default 60)
          --call-seconds S   the in-call measurement (default 20)
          --repetitions N    discoveries and samples timed (default 200)
          --phones LIST      baresip-tcp, baresip-udp, linphonec (default all)
          --kamailio PATH    the Kamailio binary (default /usr/sbin/kamailio)
          --json             one JSON object per phone
        """

        mutating func read(_ flag: String, from reader: inout OptionReader) throws {
            switch flag {
            case "--idle-seconds": idleSeconds = try reader.integer(flag, in: 1...3600)
            case "--call-seconds": callSeconds = try reader.integer(flag, in: 1...3600)
            case "--repetitions": repetitions = try reader.integer(flag, in: 1...100_000)
            case "--phones": phones = try reader.list(flag) { Phone(rawValue: $0) }
            case "--kamailio": kamailio = try reader.value(flag)
            case "--json": json = true
            default: throw OptionReader.unknown(flag)
            }
        }
    }

    enum Phone: String, CaseIterable {
        case baresipTCP = "baresip-tcp", baresipUDP = "baresip-udp", linphonec
    }

    /// Discovery in the bench's own network namespace, and whole dumps of each table by
    /// transport and family (`tcp4`, `udp6`…): medians in µs.
    struct OwnNamespaceFigures: Encodable {
        var ownNamespaceDiscoveryMicroseconds: Double
        var ownNamespaceDiscoveryCopiesMicroseconds: Double
        var tableDumpMicroseconds: [String: Double]
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
        var discoveryCopiesMicroseconds: Double
        var activitySampleMicroseconds: Double
    }

    static func main(_ arguments: [String]) -> Int32 {
        runSubcommand("softphones", arguments: arguments) { (options: Options) in
            try checkTools(kamailio: options.kamailio)
            // The common case first: a program in voipd's own network namespace (the bench
            // itself, before it has children, with a TCP listener and a UDP socket).
            let listener = try Socket.listenTCP()
            let datagrams = try Socket.make(domain: AF_INET, type: Socket.datagramType)
            let own = try median(options.repetitions) { _ = try SocketDiscovery.discover(root: getpid()) }.get()
            let ownCopies = try median(options.repetitions) { _ = try SocketDiscovery.discover(root: getpid(), method: .descriptors) }.get()
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
            let ownNamespace = OwnNamespaceFigures(ownNamespaceDiscoveryMicroseconds: own, ownNamespaceDiscoveryCopiesMicroseconds: ownCopies,
                                                   tableDumpMicroseconds: dumps)
            try printFigures(ownNamespace, json: options.json) { figures in
                let tables = figures.tableDumpMicroseconds.sorted { $0.key < $1.key }.map { "\($0.key) \(String(format: "%.1f", $0.value))" }
                print("a process with 2 sockets in voipd's own network namespace: discovery "
                      + "\(String(format: "%.1f", figures.ownNamespaceDiscoveryMicroseconds)) µs by netlink, "
                      + "\(String(format: "%.1f", figures.ownNamespaceDiscoveryCopiesMicroseconds)) µs from copies of the descriptors; "
                      + "a whole table dump (µs): \(tables.joined(separator: ", ")) (medians)")
            }
            for phone in options.phones {
                try printFigures(try measure(phone, options), json: options.json, report: report)
            }
        }
    }

    private static func measure(_ phone: Phone, _ options: Options) throws -> Figures {
        // Through the guard: a bench that dies leaves nothing behind.
        let network = try PrivateNetwork(defaultRoute: true, wrap: GuardedExec.wrap)
        defer { network.stop() }
        try NamespacedKamailio.start(in: network, binary: options.kamailio, port: 5060)
        progress("\(phone.rawValue): starting and registering")
        let pid: pid_t
        let dial: String
        // linphonec, whose standard input is held open until the measurements end.
        var linphonec: Linphonec?
        switch phone {
        case .baresipTCP, .baresipUDP:
            let transport = phone == .baresipTCP ? "tcp" : "udp"
            pid = try Baresip(in: network, name: "callee", sipPort: 5070, user: "alice", transport: transport, control: false).pid
            dial = "sip:alice@127.0.0.1"
        case .linphonec:
            let phone = try Linphonec(in: network, sipPort: 5070, registrarPort: 5060, user: "carol")
            linphonec = phone
            pid = phone.pid
            dial = "sip:carol@127.0.0.1"
        }
        let idleDiscovery = try SocketDiscovery.discover(root: pid)
        let sockets = idleDiscovery.sockets.map(\.socket)
        let adopted = try AdoptionPolicy(parsing: ["sip:port=5070"]).apply(to: sockets).adopted.count

        progress("\(phone.rawValue): idle for \(options.idleSeconds) s")
        let idle = try activity(of: pid, over: .seconds(options.idleSeconds))
        let tree = median(options.repetitions) { _ = try ProcessTree.below(pid, limit: 256) }
        let netlink = median(options.repetitions) { _ = try SocketDiscovery.discover(root: pid) }
        let procNet = median(options.repetitions) { _ = try SocketDiscovery.discover(root: pid, method: .procNet) }
        let copies = median(options.repetitions) { _ = try SocketDiscovery.discover(root: pid, method: .descriptors) }
        let sample = median(options.repetitions) { _ = ProcFS.activity(of: [pid]) }

        progress("\(phone.rawValue): in a call for \(options.callSeconds) s")
        let caller = try Baresip(in: network, name: "caller", sipPort: 5080, user: "bob", transport: "udp", dial: dial)
        let call = try activity(of: pid, over: .seconds(options.callSeconds))
        network.stop(caller.process)
        withExtendedLifetime(linphonec) {}

        return Figures(phone: phone.rawValue, idleSeconds: idle.activity.interval.seconds,
                       idleWakeupsPerMinute: idle.activity.runsPerSecond * 60,
                       idleCPUMillisecondsPerMinute: idle.activity.cpuPerSecond.seconds * 60_000,
                       callSeconds: call.activity.interval.seconds, callWakeupsPerSecond: call.activity.runsPerSecond,
                       callCPUMillisecondsPerSecond: call.activity.cpuPerSecond.seconds * 1000,
                       threadsIdle: idle.threads, threadsInCall: call.threads, socketsIdle: sockets.count, adoptedBySIP: adopted,
                       processTreeMicroseconds: try tree.get(), discoveryNetlinkMicroseconds: try netlink.get(), discoveryProcNetMicroseconds: try procNet.get(),
                       discoveryCopiesMicroseconds: try copies.get(),
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
        \(fixed(figures.discoveryProcNetMicroseconds)) µs by /proc/PID/net, \
        \(fixed(figures.discoveryCopiesMicroseconds)) µs from copies of the descriptors, of which the process tree \
        \(fixed(figures.processTreeMicroseconds)) µs; activity sample \(fixed(figures.activitySampleMicroseconds)) µs
        """)
    }

    /// Throws unless what a private network and its Kamailio need is here: root, unshare,
    /// nsenter, ip.
    static func checkTools(kamailio: String) throws {
        for tool in ["/usr/bin/unshare", "/usr/bin/nsenter", "/usr/sbin/ip", kamailio] where access(tool, X_OK) != 0 {
            throw BenchError("\(tool) is missing")
        }
        guard geteuid() == 0 else { throw BenchError("a network namespace needs root") }
    }

    /// The tree's activity over `duration`, from two samples; and its threads at the end.
    static func activity(of pid: pid_t, over duration: Duration) throws -> (activity: Activity, threads: Int) {
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
}
