import Foundation
import Glibc
import Testing
import TestAppMessages
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// The conditions of background transfers come from the kernel as they change (issue 11):
/// voipd watches rtnetlink, and a download waiting for the network starts when a route
/// appears, with nothing polled. voipd runs in a network namespace of its own, where the
/// test can add and remove a default route without touching the machine's.
@Suite("Transfer conditions from the kernel", .serialized,
       .enabled(if: (NginxServer.shouldRun && PrivateNetwork.isAvailable) || runningUnderCI, "needs nginx; \(PrivateNetwork.skipReason)"))
struct TransferConditionsTests {
    @Test("a download waits while no route leads out, starts when one appears (rtnetlink), and waits again when it goes")
    func routeStartsWaitingDownload() throws {
        let network = try PrivateNetwork()
        defer { network.stop() }
        let nginx = try NginxServer(rateLimit: "50m", wrap: network.entering)
        defer { nginx.stop() }
        let digests = [try nginx.serve("f0", size: 300_000), try nginx.serve("f1", size: 300_000)]
        let files = try makeTemporaryDirectory("voipd-transfer-files")
        defer { removeTree(files) }
        let configuration = files + "/voipd.json"
        try #"{"transfers": {}, "suspension": "signal"}"#.write(toFile: configuration, atomically: true, encoding: .utf8)
        let harness = try DaemonHarness(arguments: ["--config", configuration]) { $0.arguments = network.entering($0.arguments) }
        defer { harness.stop() }
        let control = harness.control
        #expect(try control.setPower(.auto).networkAvailable == false, "the namespace has only lo, without a default route")

        let app = try harness.launchTestApp("patient")
        try app.send(.openSession(session: "net", discretionary: nil))
        try app.expect(\.sessionOpened)
        try app.send(.download(session: "net", url: "\(nginx.baseURL)/f0", path: files + "/f0"))
        let first = try app.expect(\.transferCreated).task
        #expect(try control.transfers(app: "patient").first?.waitReason == "noNetwork")

        // A default route: RTM_NEWROUTE reaches voipd's loop, which reads the routes again.
        try Self.ip(network, ["route", "add", "default", "dev", "lo", "src", PrivateNetwork.address])
        let done = try TransferDaemonTests.completions(app, 1, timeout: .seconds(30))
        #expect(done[first]?.status == 200 && done[first]?.error == nil, "\(done)\n\(harness.log)")
        #expect(try sha256(files + "/f0") == digests[0])
        #expect(harness.log.contains("transfers: network other, not expensive, available (from the system)"), "\(harness.log)")

        // The route goes (RTM_DELROUTE): the next download waits again.
        try Self.ip(network, ["route", "del", "default"])
        #expect(try waitForText("transfers: network other, not expensive, unavailable (from the system)", in: harness.logPath, until: MonotonicInstant.now + .seconds(20)),
                "\(harness.log)")
        try app.send(.download(session: "net", url: "\(nginx.baseURL)/f1", path: files + "/f1"))
        _ = try app.expect(\.transferCreated)
        #expect(try control.transfers(app: "patient").first { $0.url.hasSuffix("/f1") }?.waitReason == "noNetwork")
        #expect(!nginx.requests.contains { $0.hasPrefix("GET /f1 ") }, "\(nginx.requests)")
    }

    /// Runs `ip` inside the namespace, to its end.
    static func ip(_ network: PrivateNetwork, _ arguments: [String]) throws {
        let ip = try network.start(["/usr/sbin/ip"] + arguments, log: "ip.log")
        #expect(try ip.waitForExit(.seconds(10)) == .exited(0), "ip \(arguments.joined(separator: " ")): \(network.read("ip.log"))")
        network.stop(ip)
    }
}
