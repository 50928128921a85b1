import Glibc
import Testing
import VoipdAdoption
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// What adoption sees of unmodified softphones registered to Kamailio: the `sip` preset
/// must take their SIP sockets and nothing else, before and during a call, and the quiet
/// detector must tell their idle from their calls. Each runs in a private network namespace
/// (standard SIP ports, nobody else's sockets). Skipped without root, Kamailio, baresip or
/// linphonec, unless CI=true, where that is a failure.
@Suite("Unmodified softphones under adoption", .serialized,
       .softphonesInPrivateNetwork(linphonec: true))
struct SoftphoneAdoptionTests {
    private func sockets(of pid: pid_t) throws -> [NetworkSocket] {
        let discovery = try SocketDiscovery.discover(root: pid)
        #expect(discovery.limitsReached.isEmpty && discovery.unreadable.isEmpty)
        return discovery.sockets.map(\.socket)
    }

    private func endpoints(_ sockets: [NetworkSocket]) -> Set<String> {
        Set(sockets.map { "\($0.transport.rawValue) \($0.role.rawValue) \($0.local.port)\($0.remote.map { "→\($0.port)" } ?? "")" })
    }

    /// The activity of `pid`'s tree over `window`, judged by a detector with that window.
    private func verdict(_ pid: pid_t, over window: Duration, thresholds: QuietThresholds = QuietThresholds()) throws -> QuietVerdict {
        var detector = QuietDetector(thresholds: QuietThresholds(window: window, wakeupsPerSecond: thresholds.wakeupsPerSecond,
                                                                 cpuPerSecond: thresholds.cpuPerSecond))
        let deadline = Deadline(window + .milliseconds(50))
        var verdict = detector.observe(ProcFS.activity(of: try ProcessTree.below(pid, limit: 64).processes), unreadSockets: 0)
        while case .measuring = verdict {
            // A measurement over time, not a synchronisation: the window has to pass.
            _ = poll(nil, 0, min(deadline.remainingMilliseconds, 500))
            verdict = detector.observe(ProcFS.activity(of: try ProcessTree.below(pid, limit: 64).processes), unreadSockets: 0)
            if deadline.hasPassed, case .measuring = verdict { throw TimedOut(description: "no verdict within \(window)") }
        }
        return verdict
    }

    @Test("baresip registered over TCP: sip takes its UDP, TCP and TLS listeners and its registrar connection, not its resolver or control sockets; copies can be taken", .timeLimit(.minutes(2)))
    func baresipOverTCP() throws {
        let network = try PrivateNetwork()
        defer { network.stop() }
        try NamespacedKamailio.start(in: network, port: 5060)
        let baresip = try Baresip(in: network, name: "alice", sipPort: 5060, user: "alice", transport: "tcp")
        let discovery = try SocketDiscovery.discover(root: baresip.pid)
        #expect(discovery.tableSources == [.netlink], "entered from a thread: voipd's own namespace is not the phone's")
        #expect(try SocketDiscovery.discover(root: baresip.pid, method: .procNet).sockets == discovery.sockets, "/proc/PID/net: the phone's namespace")
        let report = try AdoptionPolicy(parsing: ["sip"]).apply(to: discovery.sockets.map(\.socket))
        #expect(endpoints(report.adopted.map(\.socket)) == ["udp unconnected 5060", "tcp listening 5060", "tcp listening 5061", "tcp connected \(registrarConnectionPort(report))→5060"],
                "\(report.lines)")
        #expect(endpoints(report.ignored.map(\.socket)).contains("tcp listening 4444"), "ctrl_tcp: \(report.lines)")
        #expect(report.ignored.count == 3, "the control port and a resolver socket per family: \(report.lines)")
        #expect(report.ignored.allSatisfy { $0.socket.transport == .tcp || $0.socket.local.address.isUnspecified })
        #expect(report.warning == nil)

        let root = try PidFd(pid: baresip.pid)
        for socket in discovery.sockets where report.adoptedInodes.contains(socket.socket.inode) {
            let copy = try socket.takeCopy(root: root)
            #expect(try Socket.inode(of: copy) == socket.socket.inode)
        }
    }

    private func registrarConnectionPort(_ report: AdoptionReport) -> UInt16 {
        report.adopted.first { $0.socket.remote?.port == 5060 }?.socket.local.port ?? 0
    }

    @Test("baresip registered over UDP, then in a call: sip keeps to the SIP sockets (not RTP, RTCP, resolvers); idle it is quiet, in a call busy", .timeLimit(.minutes(2)))
    func baresipOverUDPInACall() throws {
        let network = try PrivateNetwork()
        defer { network.stop() }
        try NamespacedKamailio.start(in: network, port: 5060)
        let callee = try Baresip(in: network, name: "alice", sipPort: 5070, user: "alice", transport: "udp")
        let idle = try sockets(of: callee.pid)
        let sip: Set<String> = ["udp unconnected 5070", "tcp listening 5070", "tcp listening 5071"]
        #expect(endpoints(try AdoptionPolicy(parsing: ["sip"]).apply(to: idle).adopted.map(\.socket)) == sip,
                "5070 is taken for UDP and TCP: baresip's SIP port")
        let quiet = try verdict(callee.pid, over: .seconds(2))
        #expect(quiet.isQuiet, "registered and idle: \(quiet)")

        _ = try Baresip(in: network, name: "bob", sipPort: 5080, user: "bob", transport: "udp", dial: "sip:alice@127.0.0.1")
        try waitForText("Call established", in: network.directory + "/" + callee.log, timeout: .seconds(15))
        let inCall = try sockets(of: callee.pid)
        let media = inCall.filter { socket in socket.transport == .udp && !idle.contains { $0.inode == socket.inode } }
        #expect(media.count == 2, "RTP and RTCP: \(inCall)")
        let report = try AdoptionPolicy(parsing: ["sip"]).apply(to: inCall)
        #expect(endpoints(report.adopted.map(\.socket)) == sip, "\(report.lines)")
        let busy = try verdict(callee.pid, over: .seconds(2))
        guard case .busy(let activity) = busy else {
            Issue.record("in a call baresip was \(busy)")
            return
        }
        #expect(activity.runsPerSecond > 50, "its audio thread at least: \(activity)")
    }

    @Test("linphonec over UDP, given a default route: its one SIP socket is taken, its RTP and RTCP in a call are not; busy in a call even at 150 wake-ups/s", .timeLimit(.minutes(2)))
    func linphonec() throws {
        let network = try PrivateNetwork(defaultRoute: true)
        defer { network.stop() }
        try NamespacedKamailio.start(in: network, port: 5070)
        let phone = try Linphonec(in: network, sipPort: 5060, registrarPort: 5070, user: "carol")
        let idle = try sockets(of: phone.pid)
        #expect(endpoints(idle) == ["udp unconnected 5060"], "one dual-stack UDP socket: \(idle)")
        #expect(idle.first?.local.address == IPAddress("::"))
        #expect(try AdoptionPolicy(parsing: ["sip"]).apply(to: idle).adopted.map(\.socket) == idle)
        let raised = QuietThresholds(wakeupsPerSecond: 150)
        let polling = try verdict(phone.pid, over: .seconds(2))
        #expect(!polling.isQuiet, "it polls every 10 ms: busy at the default threshold: \(polling)")

        _ = try Baresip(in: network, name: "dave", sipPort: 5080, user: "dave", transport: "udp", dial: "sip:carol@127.0.0.1:5070")
        let inCall = try sockets(of: phone.pid)
        #expect(inCall.count == 3, "RTP and RTCP besides SIP: \(inCall)")
        #expect(try AdoptionPolicy(parsing: ["sip"]).apply(to: inCall).adopted.map(\.socket.inode) == idle.map(\.inode))
        let call = try verdict(phone.pid, over: .seconds(2), thresholds: raised)
        #expect(!call.isQuiet, "in a call: \(call)")
    }
}
