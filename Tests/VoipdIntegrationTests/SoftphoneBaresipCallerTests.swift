import Glibc
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// The softphone under voipd, suspended, called by a SIP user agent written outside this
/// project: baresip (unmodified, over UDP) through Kamailio. All three in a private network
/// (standard SIP ports, nobody else's); voipd stays outside, and launches the softphone
/// into the network with nsenter (which execs it: the pid voipd tracks is the softphone's).
/// Skipped without root, Kamailio or baresip, unless CI=true, where that is a failure.
@Suite("Softphone called by baresip", .serialized,
       .softphonesInPrivateNetwork())
struct SoftphoneBaresipCallerTests {
    /// How the phone is reached: over the socket its REGISTER left from (`sip`), or, with
    /// `--listen`, over UDP on its unconnected socket (`sip`), over TCP on a connection
    /// Kamailio without connection reuse opens to its listener (`sip-listener`).
    struct Reach: CustomTestStringConvertible, Sendable {
        let transport: String
        let listens: Bool
        var testDescription: String { "\(transport)\(listens ? " --listen" : "")" }
        var held: [String] { transport == "tcp" && listens ? ["sip", "sip-listener"] : ["sip"] }
        var wokenBy: String { transport == "tcp" && listens ? "sip-listener" : "sip" }
    }

    @Test("suspended, over UDP or TCP, connected or listening, called by baresip over UDP: the INVITE wakes it, it rings and answers, baresip has the call; after its BYE it is suspended again",
          .timeLimit(.minutes(2)), arguments: [Reach(transport: "udp", listens: false), Reach(transport: "tcp", listens: false),
                                               Reach(transport: "udp", listens: true), Reach(transport: "tcp", listens: true)])
    func suspendedSoftphoneAnswersBaresip(_ reach: Reach) throws {
        let transport = reach.transport
        let network = try PrivateNetwork()
        defer { network.stop() }
        try NamespacedKamailio.start(in: network, port: 5060, defines: reach.listens && transport == "tcp" ? ["WITHOUT_CONNECTION_REUSE"] : [])
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let logPath = harness.directory + "/phone.log"
        let log = try openFile(logPath, flags: O_WRONLY | O_CREAT | O_APPEND)
        let launched = try harness.control.launch(
            network.entering([Binaries.path("softphone"), "--registrar", "127.0.0.1:5060", "--user", "alice", "--transport", transport,
                              "--answer-after", "0.2", "--hang-up-after", "1"] + (reach.listens ? ["--listen", "127.0.0.1:5062"] : [])),
            name: "phone", output: log.rawValue)
        let pid = try #require(launched.pid)
        try waitForText("sip: registered for", in: logPath, timeout: .seconds(20))
        #expect(try harness.control.sockets("phone").map(\.name) == reach.held)
        try harness.suspend("phone")
        #expect(processState(pid) == "T")

        // Returns once baresip logs "Call established": the suspended phone answered it.
        _ = try Baresip(in: network, name: "bob", sipPort: 5080, user: "bob", transport: "udp", dial: "sip:alice@127.0.0.1")
        let text = ProcFS.read(logPath) ?? ""
        #expect(text.contains("sip: received INVITE sip:alice@"), "\(text)")
        try waitForText("sip: hanging up after", in: logPath, timeout: .seconds(10))
        #expect(ProcFS.read(logPath)?.contains("lifecycle: audio session active: in a call") == true, "in a call, not on background time")
        let events = try harness.control.events("phone")
        let woken = try #require(events.last { $0.from == .suspended }, "\(events)")
        #expect(woken.to == .background && woken.reason.contains(reach.wokenBy), "\(woken)")
        // Suspended again once the call, and with it the audio session, is over.
        try harness.waitForState("phone", .suspended, timeout: .seconds(15))
        #expect(processState(pid) == "T")
        #expect(network.read("bob.log").contains("Call established"))
    }
}
