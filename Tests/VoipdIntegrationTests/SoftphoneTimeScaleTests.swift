import Testing
import VoipClient
import VoipdTestSupport

/// The softphone under a voipd that runs its lifecycle faster than real time: the
/// registrar's grant is in real seconds, the keep-alive in voipd's.
/// Skipped (saying why) without Kamailio, unless CI=true, where that is a failure.
@Suite("Softphone at a time scale", .serialized, .enabled(if: KamailioServer.shouldRun, Comment(rawValue: KamailioServer.skipReason)))
struct SoftphoneTimeScaleTests {
    /// 60 s granted; a keep-alive of 600 of voipd's seconds is 60 real ones at 0.1, and the
    /// minimum, 10 real seconds (a `--timing` is not scaled), 100 of voipd's: the keep-alive is lowered to 27 real seconds (270 of
    /// voipd's), which covers the grant. Compared in mixed units, the grant (60) looked
    /// shorter than even the minimum (100): a needless warning and a keep-alive of 10 real
    /// seconds that still "lapsed".
    @Test("at a time scale of 0.1, Kamailio grants 60 s against a keep-alive of 600 of voipd's seconds (60 real ones): the softphone lowers it to 270 (27 real), the grant is covered, and voipd sees no lapse")
    func grantComparedInRealSeconds() throws {
        let kamailio = try KamailioServer(options: ["--max-expires", "60"])
        let rig = try SoftphoneRig(timeScale: 0.1, kamailio: kamailio, daemonArguments: ["--timing", "keepAliveMinimum=10"])
        defer { rig.stop() }
        try rig.launch(["--answer-after", "0.1", "--keep-alive", "600"])
        #expect(rig.log.contains("keep-alive minimum 100 s"), "\(rig.log)")
        try rig.waitForLog(#""keepAliveLowered":true,"keepAliveSeconds":270,"lapseSeconds":0"#)
        #expect(rig.log.contains("keep-alive lowered to 270 s, so that a suspended phone registers again in time (keep-alives in voipd's seconds, each 0.1 real s"),
                "\(rig.log)")
        let status = try rig.harness.status(rig.name)
        #expect(status.keepAliveSeconds == 270 && status.reachableForSeconds == 270 && status.keepAliveWarning == nil, "\(status)")
    }
}
