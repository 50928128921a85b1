import Glibc
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// The softphone and the demo against a real Kamailio with Deploy/kamailio/kamailio.cfg.
/// Skipped (saying why) without Kamailio, unless CI=true, where that is a failure.
@Suite("Softphone with Kamailio", .serialized, .enabled(if: KamailioServer.shouldRun, Comment(rawValue: KamailioServer.skipReason)))
struct SoftphoneKamailioTests {
    @Test("through Kamailio: suspended, woken by the INVITE over its REGISTER connection, it rings and answers; a lock reclaims only its presence connection")
    func callsThroughKamailio() throws {
        let kamailio = try KamailioServer()
        let rig = try SoftphoneRig(kamailio: kamailio)
        defer { rig.stop() }
        let presence = try rig.launch(["--answer-after", "0.1"])
        #expect(tcpSockets(of: rig.pid).filter(\.isListening).isEmpty, "the softphone listens on no port")
        let sip = try rig.sipConnection()
        try rig.suspend()

        // Suspended, with one connection to Kamailio and an unresolvable Contact: only that
        // connection can bring the INVITE.
        #expect(processState(rig.pid) == "T")
        let call = try rig.call(["--hold", "0.2"])
        #expect(call.status == 0, "\(call.output)\n\(rig.log)\n\(kamailio.log)")
        #expect(call.output.contains("received 180 Ringing"))
        #expect(call.output.contains("received 200 OK (CSeq 1 INVITE)"))
        #expect(rig.log.contains("sip: received INVITE sip:alice@alice.invalid"))
        let resumed = try rig.waitForState(.background)
        #expect(resumed.from == .suspended)
        try rig.waitForState(.suspended)
        #expect(processState(rig.pid) == "T")

        try rig.harness.control.system(.lock)
        // The presence peer sees the reclaimed connection end.
        try rig.expectEnd(of: presence)
        try rig.harness.control.system(.unlock)
        let second = try rig.call(["--hold", "0.2"])
        #expect(second.status == 0, "\(second.output)\n\(rig.log)\n\(kamailio.log)")
        try rig.expectHello(on: try rig.presence.accept())
        try rig.waitForState(.suspended)

        #expect(try rig.sipConnection() == sip, "the same SIP connection all along")
        #expect(!kamailio.log.contains("tcp connection from 127.0.0.1:\(sip.localPort) closed"))
        #expect(rig.log.components(separatedBy: "sip: connected to").count == 2, "connected once")
        #expect(!rig.log.contains("sip: connection lost"))
    }

    @Test("voip-demo --registrar runs against Kamailio and exits 0")
    func demoAgainstKamailio() throws {
        let kamailio = try KamailioServer()
        defer { kamailio.stop() }
        let output = try SoftphoneDemoTests.runDemo(["--registrar", "127.0.0.1:\(kamailio.port)"])
        #expect(output.contains("\n  registrar  127.0.0.1:\(kamailio.port) (--registrar)\n"))
        try SoftphoneDemoTests.checkReport(output, embeddedRegistrar: false)
    }
}
