import Foundation
import Glibc
import Testing
import VoipClient

/// Issue 10, part 6: an app suspended with nothing that can wake it is suspended loudly.
@Suite("Apps nothing can wake", .serialized)
struct ReachabilityTests {
    @Test("suspended with no VoIP socket: a warning in the log, REACHABLE NO in voipctl status; with a socket: yes")
    func unreachableIsReported() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let app = try harness.launchTestApp("mute")
        try harness.suspend(app)
        #expect(try harness.status("mute").reachable == false)
        #expect(harness.log.contains("mute: suspended with no VoIP socket: no data can wake it"), "\(harness.log)")
        let table = try runCommand([Binaries.voipctl, "--socket", harness.socketPath, "status", "mute"]).output
        let columns = table.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        let index = try #require(columns.first?.firstIndex(of: "REACHABLE"), "\(table)")
        #expect(columns.last?[index] == "NO", "\(table)")

        let (phone, _) = try harness.launchAppWithVoIPSocket("phone")
        try harness.suspend(phone)
        #expect(try harness.status("phone").reachable == true)
        #expect(!harness.log.contains("phone: suspended with no VoIP socket"))
    }

    @Test("a manifest saying \"reachable\": false: no warning, no reachability reported")
    func intendedUnreachable() throws {
        let rig = try ManifestRig(app: "clock", keys: #""reachable": false"#)
        defer { rig.stop() }
        let harness = rig.harness
        try harness.suspend("clock")
        #expect(try harness.status("clock").reachable == nil)
        #expect(!harness.log.contains("clock: suspended with no VoIP socket"))
    }
}
