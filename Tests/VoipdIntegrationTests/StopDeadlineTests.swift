import Glibc
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// A stop the kernel never completes (a task of the app asleep in the kernel where no stop
/// reaches it) does not leave the app `suspending` for ever: voipd's deadline for a stop
/// ends it, as an app whose stop failed.
@Suite("A stop that never lands", .serialized)
struct StopDeadlineTests {
    static let source = packageDirectory + "/Tests/cgroup-apps/stuck_in_vfork.c"

    @Test("an app a SIGSTOP cannot stop (its main process waits in the kernel for a vfork child, which the SIGSTOP of its group stopped) is not left 'suspending' for ever: 5 s after the stop it is continued and ended (suspendFailed), nothing of it is left stopped, and voipd serves on",
          .enabled(if: toolAvailableOrCI(ProcessTreeProgram.gcc), "needs gcc"))
    func stopThatNeverLands() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let binary = harness.directory + "/stuck_in_vfork"
        let compiler = try openFile(harness.directory + "/gcc.log", flags: O_WRONLY | O_CREAT | O_TRUNC)
        let built = try runToEnd([ProcessTreeProgram.gcc, "-O1", "-Wall", "-Werror", "-o", binary, Self.source], output: compiler.rawValue)
        try #require(built == .exited(0), "\(ProcFS.read(harness.directory + "/gcc.log") ?? "")")
        let output = try makePipe()
        let status = try harness.control.launch([binary], name: "stuck", speaksProtocol: false, output: output.second.rawValue)
        let leader = try #require(status.pid)
        // "ready": the child runs, and the leader waits for it in vfork.
        #expect(waitReadable(output.first.rawValue, Deadline(.seconds(10))))
        let child = try #require(childProcesses(of: leader).first)
        defer { kill(child, SIGKILL) }

        let asked = MonotonicInstant.now
        try harness.control.command(.background, "stuck")
        #expect(waitUntilStopped(child, Deadline(.seconds(10))), "the child is stopped with its group")
        #expect(processState(leader) == "D", "the leader waits in the kernel, where the stop does not reach it")
        let ended = try harness.waitForState("stuck", .terminated)
        #expect(MonotonicInstant.now - asked >= .seconds(5), "ended before its stop's deadline")
        #expect(ended.reason.hasPrefix("suspendFailed: could not be suspended: not stopped within 5 s"), "\(ended)")
        #expect(harness.log.contains("stuck: pid \(leader) not stopped within 5 s"), "\(harness.log)")
        #expect(try harness.status("stuck").terminationReason?.code.rawValue == "suspendFailed")
        #expect(processState(child) != "T", "the child was left stopped")
        // voipd serves on.
        let app = try harness.launchTestApp("phone")
        #expect(try harness.status(app.name).pid == app.pid)
    }
}
