import Foundation
import Glibc
import Testing
import VoipClient

/// Issue 10, part 2: a call answered in the background lasts until it ends, not until a
/// budget runs out; when it ends, the app is suspended again at once.
@Suite("Calls in the background", .serialized)
struct CallStateTests {
    /// Budgets of 1 and 2 s: a call outlives them several times over within the test.
    static let shortBudgets = ["--timing", "wakeBudget=1", "--timing", "resumedTaskBudget=2", "--timing", "expirationWarning=1"]

    @Test("a call answered during a wake outlives the wake and task budgets; status shows it; its end suspends the app at once (the settling after it, no budget)")
    func callOutlivesBudgets() throws {
        let harness = try DaemonHarness(arguments: Self.shortBudgets)
        defer { harness.stop() }
        // The app answers in its wake handler: the call begins within the 1 s wake budget
        // whatever the test is doing. Answered by the test (the app's report reaches it, it
        // tells the app, the app asks voipd), the call could begin after the budget on a
        // loaded machine, the app suspended first.
        let (app, remote) = try harness.launchAppWithVoIPSocket("phone", ["--no-ack", "voipSocketReadable", "--answer-on-wake"])
        try harness.suspend(app)

        try remote.write("INVITE sip:phone@voipd.invalid SIP/2.0\r\n\r\n")
        let wake = try app.expectEvent(.voipSocketReadable)
        try app.expect(.audioSession(active: true))
        try app.send(.acknowledge(eventID: wake.id))
        // Four seconds: four wake budgets, two task budgets. Still running.
        #expect(throws: TimedOut.self) { try harness.waitForState("phone", .suspended, timeout: .seconds(4)) }
        #expect(processState(app.pid) != "T")
        let status = try harness.status("phone")
        #expect(status.state == .background)
        #expect((status.inCallSeconds ?? 0) >= 3.5, "\(status)")
        let table = try runCommand([Binaries.voipctl, "--socket", harness.socketPath, "status", "phone"]).output
        // Whole seconds, between what status said before and after voipctl ran (a program
        // built with a sanitizer, on a busy machine, can take seconds to start).
        let before = Int(status.inCallSeconds ?? 0), after = Int(try harness.status("phone").inCallSeconds ?? 0)
        let row = table.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        let call = try #require(row.first?.firstIndex(of: "CALL"), "\(table)")
        #expect(row.last.map { $0.count > call + 1 && Int($0[call]).map { (before...after).contains($0) } == true && $0[call + 1] == "s" } == true,
                "in a call for \(before) to \(after) s: \(table)")

        // The call ends: suspended at once (the reply comes after the stop), by the settling
        // that follows the call's end, not by a budget that ran out later. (Timed from the
        // test, "within a second" measured the test's command reaching the app and the app's
        // request reaching voipd on a loaded machine as well.)
        try app.send(.audioSession(active: false))
        let suspended = try harness.waitForState("phone", .suspended, timeout: .seconds(5))
        #expect(suspended.reason == "no background work left", "\(suspended)")
        #expect(try harness.status("phone").inCallSeconds == nil)
        let log = harness.log
        #expect(log.contains("phone: in a call (audio session active)"))
        #expect(log.contains("phone: call over after"))
    }

    @Test("a manifest with \"calls\": false refuses the call state; the app is suspended as usual")
    func manifestForbids() throws {
        let rig = try ManifestRig(app: "mute", keys: #""calls": false"#, daemonArguments: Self.shortBudgets)
        defer { rig.stop() }
        let (harness, app) = (rig.harness, rig.app)
        try app.send(.audioSession(active: true))
        let refusal = try app.expect(\.audioSessionRefusal)
        #expect(refusal.contains("\"calls\": false"), "\(refusal)")
        try harness.suspend("mute")
    }

    @Test("the maximum call duration ends the call state; the app is suspended")
    func maximumCallDuration() throws {
        let harness = try DaemonHarness(arguments: Self.shortBudgets + ["--timing", "maximumCallDuration=2"])
        defer { harness.stop() }
        let app = try harness.launchTestApp("phone")
        try app.send(.audioSession(active: true))
        try app.expect(.audioSession(active: true))
        try harness.control.command(.background, "phone")
        try app.expectEvent(.didEnterBackground)
        let suspended = try harness.waitForState("phone", .suspended, timeout: .seconds(10))
        #expect(suspended.reason == "no background work left")
        #expect(harness.log.contains("the maximum call duration was reached"))
    }
}
