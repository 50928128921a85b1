import Glibc
import Testing
import VoipClient
import VoipdSystem

/// System calls of voipd that fail as the kernel may make them fail, injected by strace
/// (``SyscallFaults``) into a real voipd serving a real app: a failure leaves no app stuck
/// half-way, and loses no deadline.
@Suite("System calls that fail", .serialized)
struct SyscallFaultTests {
    @Test("every timerfd_settime of voipd fails (ENOMEM): a suspended app's keep-alive still wakes it, again and again, by the loop's own wait; the log says it once",
          .enabled(if: SyscallFaults.available, "needs strace"))
    func keepAliveWithoutTheTimerfd() throws {
        let harness = try DaemonHarness(arguments: ["--timing", "keepAliveMinimum=2"])
        defer { harness.stop() }
        let app = try harness.launchTestApp("phone")
        let faults = try SyscallFaults(pid: harness.daemon.pid, failing: "timerfd_settime", with: "ENOMEM", in: harness.directory)
        defer { faults.detach() }
        try app.send(.keepAlive(seconds: 2))
        try app.expect(.keepAliveSet)
        try harness.suspend(app)
        for _ in 0..<2 {
            let wake = try harness.waitForState("phone", .background)
            #expect(wake.from == .suspended && wake.reason == "keep-alive", "\(wake)")
            try app.expectEvent(.keepAlive)
            try app.expect(.keepAliveHandler)
            try harness.waitForState("phone", .suspended)
        }
        let said = harness.log.split(separator: "\n").filter { $0.contains("cannot arm the timer") }
        #expect(said.count == 1, "\(said)")
    }

    @Test("voipd's SIGSTOP of an app fails (EPERM): the app is not left waiting for a stop that will not come; it is continued, told willTerminate and ended (suspendFailed), and data on its held socket relaunches it",
          .enabled(if: SyscallFaults.available, "needs strace"))
    func stopThatFails() throws {
        try withNextStopFailing { harness, app, remote in
            try harness.control.command(.background, app.name)
            try app.expectEvent(.willResignActive)
            try app.expectEvent(.didEnterBackground)
            try app.expectEvent(.willTerminate)
            let ended = try harness.waitForState("phone", .terminated)
            #expect(ended.reason.hasPrefix("suspendFailed: could not be suspended: "), "\(ended)")
            #expect(harness.log.contains("phone: cannot suspend pid \(app.pid)"), "\(harness.log)")
            #expect(try harness.status("phone").terminationReason?.code.rawValue == "suspendFailed")

            // Not ended by choice: its held socket stays, and data brings it back.
            try remote.write("INVITE")
            let relaunched = try harness.acceptApp("phone")
            #expect(relaunched.pid != app.pid)
            try relaunched.expectEvent(.voipSocketReadable)
            #expect(try relaunched.expectRead("sip") == .data("INVITE"))
        }
    }

    @Test("a suspended app continued behind voipd's back (a shell's kill -CONT) that voipd cannot stop again (EPERM): voipd's record does not go on saying suspended while it runs; it is told willTerminate and ended (suspendFailed)",
          .enabled(if: SyscallFaults.available, "needs strace"))
    func restopThatFails() throws {
        try withNextStopFailing(after: { harness, app in try harness.suspend(app) }) { harness, app, _ in
            #expect(kill(app.pid, SIGCONT) == 0)
            // A status request is where voipd looks.
            _ = try harness.status("phone")
            try app.expectEvent(.willTerminate)
            let ended = try harness.waitForState("phone", .terminated)
            #expect(ended.reason.hasPrefix("suspendFailed: could not be suspended: "), "\(ended)")
            #expect(harness.log.contains("phone: cannot stop pid \(app.pid) again"), "\(harness.log)")
        }
    }

    @Test("voipd's SIGCONT of a suspended app woken by data fails (EPERM), on the wake path and again as the lifecycle's resume: the app is not left stopped while voipd's record says it runs; it is killed (suspendFailed: could not be resumed), and the data relaunches it",
          .enabled(if: SyscallFaults.available, "needs strace"))
    func resumeThatFails() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let (app, remote) = try harness.launchAppWithVoIPSocket("phone")
        try harness.suspend(app)
        // voipd's next two kill(2) calls: the SIGCONTs of the app's process group.
        let faults = try SyscallFaults(pid: harness.daemon.pid, failing: "kill", with: "EPERM", when: "1..2", in: harness.directory)
        defer { faults.detach() }
        try remote.write("INVITE")
        let ended = try harness.waitForState("phone", .terminated)
        #expect(ended.reason.hasPrefix("suspendFailed: could not be resumed: "), "\(ended)")
        #expect(harness.log.contains("phone: cannot resume pid \(app.pid)"), "\(harness.log)")
        #expect(try harness.status("phone").terminationReason?.code.rawValue == "suspendFailed")

        // Not ended by choice: its held socket stays, and the data brings it back.
        let relaunched = try harness.acceptApp("phone")
        #expect(relaunched.pid != app.pid)
        try relaunched.expectEvent(.voipSocketReadable)
        #expect(try relaunched.expectRead("sip") == .data("INVITE"))
    }

    /// A voipd with a launched app `phone` holding a VoIP socket; `prepare`, then voipd's next
    /// kill(2) fails with EPERM: the next SIGSTOP of a launched app's process group (its pidfd
    /// signals are another call); then `body`, with the app and the far end of its socket.
    func withNextStopFailing(after prepare: (DaemonHarness, TestAppHandle) throws -> Void = { _, _ in },
                             _ body: (DaemonHarness, TestAppHandle, PeerConnection) throws -> Void) throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let (app, remote) = try harness.launchAppWithVoIPSocket("phone")
        try prepare(harness, app)
        let faults = try SyscallFaults(pid: harness.daemon.pid, failing: "kill", with: "EPERM", when: "1", in: harness.directory)
        defer { faults.detach() }
        try body(harness, app, remote)
    }

    @Test("voipd cannot watch a process it has just started (epoll_ctl fails, ENOSPC: the user's epoll watches are spent): the launch is refused with the reason, the process is not left running unsupervised, and voipd serves on",
          .enabled(if: SyscallFaults.available, "needs strace"))
    func launchThatCannotBeWatched() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        // A program this test alone runs: sleep with a duration of its own.
        let marker = "86400.\(UInt32.random(in: 1...UInt32.max))"
        // voipd's next epoll_ctl is the registration of the launched process's pidfd.
        let faults = try SyscallFaults(pid: harness.daemon.pid, failing: "epoll_ctl", with: "ENOSPC", when: "1", in: harness.directory)
        defer { faults.detach() }
        var refusal: (any Error)?
        do {
            _ = try harness.control.launch(["/bin/sleep", marker], name: "sleeper", speaksProtocol: false)
        } catch {
            refusal = error
        }
        #expect(refusal.map { "\($0)" }?.contains("cannot start /bin/sleep") == true, "\(refusal.map { "\($0)" } ?? "launched")")
        let left = Self.processes(withArgument: marker)
        for pid in left { kill(pid, SIGKILL) }
        #expect(left.isEmpty, "pid \(left) runs with no one supervising it")
        faults.detach()
        #expect(try harness.control.status().allSatisfy { $0.name != "sleeper" }, "a command that did not start leaves no app")
        let app = try harness.launchTestApp("phone")
        #expect(try harness.status(app.name).pid == app.pid, "voipd serves on")
    }

    /// The processes with `argument` on their command line.
    static func processes(withArgument argument: String) -> [pid_t] {
        guard let directory = opendir("/proc") else { return [] }
        defer { closedir(directory) }
        var found: [pid_t] = []
        while let entry = readdir(directory) {
            guard let pid = pid_t(DirectoryEntry.name(entry)),
                  let command = ProcFS.read("/proc/\(pid)/cmdline") else { continue }
            if command.split(separator: "\0").contains(Substring(argument)) { found.append(pid) }
        }
        return found
    }
}
