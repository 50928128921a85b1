import Glibc
import Testing
import VoipClient
import VoipdProtocol
import VoipdSystem
import VoipdTestSupport

/// An in-place upgrade whose new program would not find a frozen app's cgroup by itself (its
/// configuration changed to signals, or to another directory, before the upgrade): the app
/// keeps the cgroup the old program froze it in, and only a thaw there wakes it. A SIGCONT
/// to a frozen task does nothing, so an app the new program took for SIGSTOPped would sleep
/// through every wake, and be left frozen when voipd stops.
@Suite("voipd with the cgroup freezer: an upgrade to another configuration", .serialized)
struct FrozenUpgradeTests {
    @Test("upgraded in place after its configuration changed to signals: a frozen app keeps its cgroup, data thaws it there, and voipd's stop thaws it",
          .enabled(if: ScratchCgroup.availableOrCI(.v2), "needs root and a cgroup2 mount"))
    func upgradeToSignalsKeepsTheCgroup() throws {
        try DaemonFreezerTests.withFreezerDaemon(.v2) { harness, scratch, directory in
            let (app, remote) = try harness.launchAppWithVoIPSocket("phone")
            let cgroup = scratch.path + "/voipd/app-phone"
            try harness.suspend(app)
            #expect(DaemonFreezerTests.frozen(cgroup))

            // The file the new program reads says signals now (what the harness started voipd with).
            _ = try DaemonFreezerTests.configuration(#"{"suspension": "signal"}"#, in: directory, named: "freezer.json")
            _ = try harness.control.upgrade()
            // The new program has no freezer of its own (it says so as it starts serving, after the reply).
            try waitForText("suspension by SIGSTOP", in: harness.logPath)
            #expect(try harness.status("phone").suspension == "cgroup v2 freezer", "an app keeps the backend it was suspended with")
            #expect(DaemonFreezerTests.frozen(cgroup), "still frozen across the upgrade")

            try remote.write("INVITE after the upgrade")
            _ = try app.expectEvent(.voipSocketReadable)
            #expect(try app.expectRead("sip") == .data("INVITE after the upgrade"))
            try harness.waitForState("phone", .suspended)
            #expect(DaemonFreezerTests.frozen(cgroup), "frozen again in its cgroup")

            // Stopping, voipd thaws it: nothing is left frozen with no one to thaw it.
            try harness.daemon.pidfd.send(SIGTERM)
            #expect(try harness.daemon.waitForExit(.seconds(20)) == .exited(0))
            #expect(!DaemonFreezerTests.frozen(cgroup), "left frozen by voipd's stop")
        }
    }
}
