import Glibc
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// With `SIGSTOP`, anyone's `SIGCONT` resumes a suspended app behind voipd's back: voipd
/// notices it when it next looks (here `status`), by the kernel's "continued" report for its
/// child, says so, and stops the app again; its own wakes are not mistaken for one.
@Suite("voipd noticing a SIGSTOPped app resumed by someone else", .serialized)
struct UnexpectedResumeTests {
    static let warning = "while voipd had it suspended (a SIGCONT not voipd's"

    /// A voipd suspending with signals, and its app `phone` with a VoIP socket, suspended, for `body`.
    static func withSuspendedApp(_ body: (DaemonHarness, TestAppHandle, PeerConnection) throws -> Void) throws {
        let directory = try makeTemporaryDirectory("voipd-signal-config")
        defer { removeTree(directory) }
        let configuration = try DaemonFreezerTests.configuration(#"{"suspension": "signal"}"#, in: directory, named: "voipd.json")
        let harness = try DaemonHarness(arguments: ["--config", configuration])
        defer { harness.stop() }
        let (app, remote) = try harness.launchAppWithVoIPSocket("phone")
        try harness.suspend(app)
        #expect(try harness.status("phone").suspension == "SIGSTOP")
        #expect(processState(app.pid) == "T")
        try body(harness, app, remote)
    }

    /// As a shell's `kill -CONT` would: `status` then finds the app running, says so, and
    /// voipd stops it again.
    static func continueBehindVoipd(_ app: TestAppHandle, _ harness: DaemonHarness) throws {
        #expect(try runToEnd(["/bin/kill", "-CONT", "\(app.pid)"]) == .exited(0))
        try waitUntil("pid \(app.pid) runs") { processState(app.pid) != "T" }
        #expect(try harness.status("phone").state == .suspended, "voipd's record")
        #expect(harness.log.contains("phone: pid \(app.pid) resumed by someone else"), "\(harness.log.suffix(2000))")
        #expect(harness.log.contains(Self.warning + ": a shell's fg, kill -CONT, a debugger); stopping it again"))
        try waitUntil("pid \(app.pid) is stopped again") { processState(app.pid) == "T" }
    }

    @Test("a stray SIGCONT: status finds the app running, the log says so, voipd stops it again; a wake by data afterwards is voipd's own and not reported")
    func strayContinue() throws {
        try Self.withSuspendedApp { harness, app, remote in
            // Nothing to report while it stays stopped.
            _ = try harness.status("phone")
            #expect(!harness.log.contains(Self.warning))
            try Self.continueBehindVoipd(app, harness)

            // voipd's own wake and stop are not someone else's.
            try remote.write("INVITE")
            let event = try app.expectEvent(.voipSocketReadable)
            #expect(try app.expectRead("sip") == .data("INVITE"))
            try app.send(.acknowledge(eventID: event.id))
            try harness.waitForState("phone", .suspended)
            _ = try harness.status("phone")
            _ = try harness.control.status()
            #expect(harness.log.components(separatedBy: Self.warning).count == 2, "reported once, for the stray SIGCONT alone")

            // The next stray SIGCONT, after voipd's own stop, is seen too.
            #expect(try runToEnd(["/bin/kill", "-CONT", "\(app.pid)"]) == .exited(0))
            try waitUntil("pid \(app.pid) runs") { processState(app.pid) != "T" }
            _ = try harness.control.status()
            #expect(harness.log.components(separatedBy: Self.warning).count == 3, "\(harness.log.suffix(2000))")
            try waitUntil("pid \(app.pid) is stopped again") { processState(app.pid) == "T" }
        }
    }

    @Test("a stray SIGCONT after an in-place upgrade (the new program has no record of the old one's look at the stop) is noticed as before it")
    func strayContinueAfterAnUpgrade() throws {
        try Self.withSuspendedApp { harness, app, _ in
            _ = try harness.control.upgrade()
            #expect(processState(app.pid) == "T", "still stopped across the upgrade")
            try Self.continueBehindVoipd(app, harness)
        }
    }
}
