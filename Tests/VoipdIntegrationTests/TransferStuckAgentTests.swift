import Foundation
import Glibc
import Testing
import TestAppMessages
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// An in-place upgrade kills the transfer agents and waits for them to end, but only so
/// long: an agent in an uninterruptible sleep (here frozen by the cgroup v1 freezer, whose
/// frozen tasks a SIGKILL does not end until they are thawed, as a write to a hung NFS server
/// would hold it) must hold neither the upgrade nor voipd's single loop. The new program
/// reaps it when it ends at last, and the download goes on.
@Suite("An agent that does not end holds no upgrade", .serialized,
       .enabled(if: NginxServer.shouldRun && ScratchCgroup.availableOrCI(.v1), "needs nginx and a cgroup v1 freezer hierarchy, as root"))
struct TransferStuckAgentTests {
    @Test("an upgrade with the agent frozen (uninterruptible) goes on without it; the new program reaps it once it ends, and the download completes")
    func upgradePastFrozenAgent() throws {
        let rig = try TransferRestartTests.SlowDownload()
        defer { rig.stop() }
        let (harness, app, path, task) = (rig.harness, rig.app, rig.path, rig.task)
        let voipd = harness.daemon.pid
        let agents = TmuxSession.children(of: voipd).filter { (ProcFS.read("/proc/\($0)/comm") ?? "").hasPrefix("voipd-transfer") }
        let agent = try #require(agents.first, "the agent runs: \(TmuxSession.children(of: voipd))")
        let watched = try PidFd(pid: agent)

        let scratch = try ScratchCgroup(.v1)
        defer { scratch.tearDown() }
        let cgroup = try AppCgroup(path: scratch.path, version: .v1)
        try openFile(scratch.path + "/cgroup.procs", flags: O_WRONLY).writeAll(Array("\(agent)".utf8))
        try cgroup.freeze()
        try waitUntilFrozen(cgroup)

        // voipd kills it and waits a bounded time; before, the upgrade (and voipd's loop)
        // waited as long as the agent stayed frozen.
        let upgraded = try harness.control.upgrade(timeout: .seconds(15))
        #expect(upgraded.pid == voipd)
        #expect(try !waitReadable(watched.descriptor.rawValue, until: MonotonicInstant.now), "the killed agent has not ended: it is frozen")
        #expect(harness.log.contains("has not ended"), "\(harness.log)")

        // Thawed, it ends; the program voipd runs now reaps it (its child, not a zombie).
        try cgroup.thaw()
        #expect(try waitReadable(watched.descriptor.rawValue, until: MonotonicInstant.now + .seconds(20)), "the agent ended once thawed")
        try waitForText("ended at last", in: harness.logPath)
        #expect(access("/proc/\(agent)", F_OK) != 0, "reaped by voipd: \(processState(agent).map(String.init) ?? "gone")")

        let done = try TransferDaemonTests.completions(app, 1, timeout: .seconds(60))
        #expect(done[task]?.error == nil && [200, 206].contains(done[task]?.status), "\(done)\n\(harness.log)")
        #expect(try sha256(path) == rig.digest)
    }
}
