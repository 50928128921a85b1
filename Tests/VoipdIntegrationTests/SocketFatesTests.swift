import Foundation
import Glibc
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// Seed 004's fates of a suspended app's ordinary socket (docs/LIFECYCLE.md, "The fates of
/// an ordinary socket"): the kernel keeps what arrives and the app reads it on resume; a
/// queue that reaches `reclaimQueuedBytes` gets the socket killed, and the app reads the
/// error on resume. (The third, reclaim by policy, is ReclaimTests'.) A VoIP socket is
/// never touched.
@Suite("The fates of an ordinary socket", .serialized)
struct SocketFatesTests {
    /// A test app with a VoIP socket and an ordinary connection, suspended.
    private static func suspendedApp(_ harness: DaemonHarness) throws -> (app: TestAppHandle, sip: PeerConnection, presence: PeerConnection) {
        let (app, sip) = try harness.launchAppWithVoIPSocket("phone", ["--no-ack", "voipSocketReadable"])
        let peer = try harness.makePeer()
        try app.send(.connect(socket: "presence", address: peer.address))
        let presence = try peer.accept()
        try app.expect(.connected(socket: "presence"))
        try harness.suspend(app)
        return (app, sip, presence)
    }

    /// A voipd whose configuration file sets `reclaimQueuedBytes` (nil: no file), in `files`.
    private static func daemon(reclaimQueuedBytes: Int?, files: String) throws -> DaemonHarness {
        guard let bytes = reclaimQueuedBytes else { return try DaemonHarness() }
        try Data(#"{"reclaimQueuedBytes": \#(bytes), "suspension": "signal"}"#.utf8).write(to: URL(fileURLWithPath: files + "/voipd.json"))
        return try DaemonHarness(arguments: ["--config", files + "/voipd.json"])
    }

    /// 60 KB sent to the suspended app's ordinary connection wait for it, and it reads them in the foreground.
    private static func expectKeptUntilResume(reclaimQueuedBytes: Int?) throws {
        let files = try makeTemporaryDirectory("voipd-fates")
        defer { removeTree(files) }
        let harness = try daemon(reclaimQueuedBytes: reclaimQueuedBytes, files: files)
        defer { harness.stop() }
        let (app, _, presence) = try suspendedApp(harness)
        let sent = String(repeating: "p", count: 60_000)
        try presence.write(sent)
        try harness.control.command(.foreground, "phone")
        try app.expectEvent(.willEnterForeground)
        try app.send(.read(socket: "presence"))
        #expect(try app.expectRead("presence") == .data(sent))
        #expect(try harness.status("phone").reclaimedSockets == 0)
    }

    @Test("the first fate: what arrives for a suspended app's ordinary socket waits, and the app reads all of it once resumed")
    func keptUntilResume() throws {
        try Self.expectKeptUntilResume(reclaimQueuedBytes: nil)
    }

    @Test("reclaimQueuedBytes 0 turns the second fate off (it is no limit of zero bytes)")
    func off() throws {
        try Self.expectKeptUntilResume(reclaimQueuedBytes: 0)
    }

    @Test("the second fate: an ordinary socket whose queue reaches reclaimQueuedBytes is reset while the app sleeps, also after an in-place upgrade; on resume it reads ECONNRESET; its VoIP socket still wakes it",
          arguments: [false, true])
    func resetWhenTheQueueFillsUp(upgraded: Bool) throws {
        let files = try makeTemporaryDirectory("voipd-fates")
        defer { removeTree(files) }
        let harness = try Self.daemon(reclaimQueuedBytes: 65536, files: files)
        defer { harness.stop() }
        let (app, sip, presence) = try Self.suspendedApp(harness)
        if upgraded { _ = try harness.control.upgrade() }
        // Past the limit: reset, without waking the app.
        try presence.write(String(repeating: "b", count: 200_000))
        try waitForText("phone: reset fd", in: harness.logPath)
        #expect(try harness.status("phone").state == .suspended)
        #expect(try harness.status("phone").reclaimedSockets == 1)
        #expect(processState(app.pid) == "T")
        #expect(throws: Errno.connectionReset, "the peer sees the connection reset") {
            while try presence.read(timeout: .seconds(20)).map({ !$0.isEmpty }) == true {}
        }

        // Data on the VoIP socket wakes it; the presence connection reports the error.
        try sip.write("INVITE")
        let wake = try app.expectEvent(.voipSocketReadable)
        #expect(try app.expectRead("sip") == .data("INVITE"))
        try app.send(.read(socket: "presence"))
        #expect(try app.expectRead("presence") == .failed(errno: ECONNRESET))
        try app.send(.acknowledge(eventID: wake.id))
    }
}
