import Glibc
import Testing
import VoipdSystem

/// Noticing that an app stopped with SIGSTOP was resumed by someone else: for any process by
/// /proc (its state, and its main thread's run count), for a child also by the kernel's
/// "continued" report, which voipd's own stop and continue do not leave behind.
@Suite("unexpected resumes of stopped apps")
struct StopWitnessTests {
    /// A child in a session of its own (as voipd starts apps) that does nothing.
    func startSleeper() throws -> ProcessHandle {
        ProcessHandle(try spawn(SpawnRequest(arguments: ["/bin/sleep", "600"], environment: [])))
    }

    /// Kills and reaps `process`, if it has not been already: the end of every test.
    func end(_ process: ProcessHandle) {
        try? process.pidfd.send(SIGKILL)
        _ = try? process.pidfd.waitForExit()
    }

    func stop(_ process: ProcessHandle) throws {
        try process.pidfd.send(SIGSTOP)
        try waitUntil("pid \(process.pidfd.pid) is stopped") { ProcFS.state(of: process.pidfd.pid) == "T" }
    }

    @Test("a stray SIGCONT is seen by /proc (resumed), and a SIGCONT followed by a SIGSTOP too (ran and stopped again)")
    func witness() throws {
        let sleeper = try startSleeper()
        defer { end(sleeper) }
        let pid = sleeper.pidfd.pid
        #expect(StopWitness(stoppedProcess: pid) == nil, "a running process has no stop to witness")
        try stop(sleeper)
        let witness = try #require(StopWitness(stoppedProcess: pid))
        observe(for: .milliseconds(50))
        #expect(witness.check() == .stillStopped)

        // From another process, as a shell's `kill -CONT` would.
        #expect(try runToEnd(["/bin/kill", "-CONT", "\(pid)"]) == .exited(0))
        try waitUntil("pid \(pid) is no longer stopped") { ProcFS.state(of: pid) != "T" }
        // The state inside the report is whatever /proc said at that moment: the resumed sleeper
        // goes from R to S on its own, so only the kind of report is compared.
        let afterContinue = witness.check()
        guard case .resumed(let state) = afterContinue else {
            Issue.record("after a stray SIGCONT the witness says \(afterContinue)")
            return
        }
        #expect(state != "T")

        try stop(sleeper)
        #expect(witness.check() == .ranAndStoppedAgain)
        let second = try #require(StopWitness(stoppedProcess: pid))
        #expect(second.check() == .stillStopped)

        try sleeper.pidfd.send(SIGKILL)
        _ = try sleeper.pidfd.waitForExit()
        #expect(second.check() == .gone)
    }

    @Test("a child's continued report: left by someone else's SIGCONT, taken once; none after voipd's own stop, continue and stop")
    func continuedReport() throws {
        let sleeper = try startSleeper()
        defer { end(sleeper) }
        let pid = sleeper.pidfd.pid
        // voipd's own cycle: stopped, continued (a wake), stopped again. The stop replaces the
        // report the continue left.
        try stop(sleeper)
        try sleeper.pidfd.send(SIGCONT)
        try waitUntil("pid \(pid) runs") { ProcFS.state(of: pid) != "T" }
        try stop(sleeper)
        #expect(try !sleeper.pidfd.takeContinuedReport())

        #expect(try runToEnd(["/bin/kill", "-CONT", "\(pid)"]) == .exited(0))
        try waitUntil("pid \(pid) runs") { ProcFS.state(of: pid) != "T" }
        #expect(try sleeper.pidfd.takeContinuedReport())
        #expect(try !sleeper.pidfd.takeContinuedReport(), "the report is taken once")
    }
}
