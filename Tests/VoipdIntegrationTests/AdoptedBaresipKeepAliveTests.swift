import Foundation
import Glibc
import Testing
import VoipClient
import VoipdProtocol
import VoipdSystem
import VoipdTestSupport

/// What an adopted program cannot ask for, voipd has to give it: keep-alive resumes for
/// its own re-registration timers, and a call that lasts as long as it lasts.
@Suite("voipd keeping an adopted baresip registered and in its calls", .serialized,
       .softphonesInPrivateNetwork())
struct AdoptedBaresipKeepAliveTests {
    /// Kamailio grants 20 s whatever baresip asks; baresip refreshes at half of what it was
    /// granted (`rwait=50`); voipd's keep-alive minimum is 4 s, a fifth of the expiry (as
    /// 600 s against a registrar granting 3600).
    static let grantedSeconds = 20
    static let keepAliveSeconds = 4

    @Test("a registration granted for 20 s never lapses while baresip is suspended: resumed every 4 s, it re-registers from its own timers, and a call after 3 expiries still rings; then a call held for 10 s at a time scale of 0.1 (100 s of voipd's time, past every budget) is never cut short, and it is suspended again after the BYE",
          .timeLimit(.minutes(4)))
    func keepAliveAndALongCall() throws {
        let network = try PrivateNetwork()
        defer { network.stop() }
        try NamespacedKamailio.start(in: network, port: 5060, defines: ["MAX_EXPIRES=\(Self.grantedSeconds)"])
        // At a time scale of 0.1 the keep-alive minimum would be 60 s: set after scaling.
        let alice = try AdoptedBaresip(in: network, transport: "tcp", accountParameters: ";rwait=50", timeScale: 0.1,
                                       daemonArguments: ["--timing", "keepAliveMinimum=\(Self.keepAliveSeconds)"])
        let (harness, pid, log) = (alice.harness, alice.pid, alice.log)
        defer { harness.stop() }
        let wakesBefore = try harness.status("alice").wakes

        // Three expiries: without keep-alive resumes the binding would be gone after one.
        let kamailioLog = network.directory + "/kamailio.log"
        let registrations = registrationCount(kamailioLog)
        let watched = Deadline(.seconds(3 * Self.grantedSeconds))
        var suspendedSeen = 0
        while !watched.hasPassed {
            let record = try? harness.nextTransition(timeout: .milliseconds(Int64(max(1, watched.remainingMilliseconds))))
            if let record, record.app == "alice", record.to == .suspended { suspendedSeen += 1 }
        }
        let refreshed = registrationCount(kamailioLog) - registrations
        #expect(refreshed >= 4, "re-registered every 10 s of 60 from its own timers: \(refreshed) times")
        #expect(!network.read("alice.log").contains("401") && !network.read("alice.log").contains("408"), "no refused or lost REGISTER")
        let wakes = try harness.status("alice").wakes - wakesBefore
        #expect(wakes >= 10, "a keep-alive resume every 4 s: \(wakes) wakes in 60 s")
        #expect(suspendedSeen >= 10, "suspended again after each: \(suspendedSeen)")

        // The binding is alive if Kamailio still finds her (it answers 404 to an unknown user).
        try waitForSuspended(pid, harness)
        let caller = try Baresip(in: network, name: "bob", sipPort: 5080, user: "bob", transport: "udp", dial: "sip:alice@127.0.0.1")
        try waitForText("Call established", in: log, timeout: .seconds(10))
        let establishedSeen = wallClockSeconds()

        // 10 s of call: 100 s of voipd's time, past its 30 s (scaled: 3 s) background budget
        // and every watchdog. Busy (its audio thread), it must not be stopped.
        // Her transitions queued since her last suspension come first. Those stamped before the
        // call was seen established are not the call's: while bob starts and the call is set
        // up, keep-alive rounds go on (resumed, measured quiet, suspended), and under load bob's
        // start outlasted one. The last of them says whether she was in the call when it was
        // seen established (a wake is stamped at its SIGCONT, before she runs); each one after
        // it must leave her running.
        var beforeTheCall: TransitionRecord?
        let call = Deadline(.seconds(10))
        while !call.hasPassed {
            guard let record = try? harness.nextTransition(timeout: .milliseconds(Int64(max(1, call.remainingMilliseconds)))),
                  record.app == "alice" else { continue }
            if record.time < establishedSeen {
                beforeTheCall = record
                continue
            }
            #expect(record.to != .suspended && record.to != .terminated,
                    """
                    in the call: \(record.from.rawValue) → \(record.to.rawValue): \(record.reason), \(record.time - establishedSeen) s after "Call established" was seen; \
                    voipd's log about alice:\n\(harness.log.split(separator: "\n").filter { $0.contains("alice") }.suffix(40).joined(separator: "\n"))
                    """)
        }
        #expect(beforeTheCall.map { $0.to != .suspended && $0.to != .terminated } == true,
                "when the call was seen established her last transition was \(beforeTheCall.map { "\($0.from.rawValue) → \($0.to.rawValue): \($0.reason), \($0.time - establishedSeen) s" } ?? "none since her suspension")")
        #expect(ProcFS.state(of: pid) != "T", "running through the call")
        #expect(!network.read("alice.log").contains("terminated") && !network.read("bob.log").contains("terminated"),
                "the call is still up after 10 s")
        try caller.process.pidfd.send(SIGTERM)
        _ = try caller.process.waitForExit(.seconds(10))
        try harness.waitForState("alice", .suspended, timeout: .seconds(30))
        #expect(network.read("alice.log").components(separatedBy: "Call established").count - 1 == 1, "one call, no ghost")
        #expect(try harness.status("alice").pid == pid, "the same baresip throughout")
    }

    /// Her REGISTERs Kamailio has accepted so far (Deploy/kamailio/kamailio.cfg logs each).
    private func registrationCount(_ log: String) -> Int {
        (ProcFS.read(log) ?? "").components(separatedBy: "voipd: REGISTER of sip:alice@127.0.0.1 from").count - 1
    }

    /// Waits until voipd has stopped it (a keep-alive resume may be under way), and checks the
    /// kernel agrees. A keep-alive resume can come between voipd's answer and the look at
    /// /proc, so the look counts only when voipd still reports the same suspension after it.
    private func waitForSuspended(_ pid: pid_t, _ harness: DaemonHarness) throws {
        let deadline = MonotonicInstant.now + .seconds(30)
        while true {
            if try harness.status("alice").state != .suspended { try harness.waitForState("alice", .suspended) }
            let before = try harness.status("alice")
            let state = ProcFS.state(of: pid)
            let after = try harness.status("alice")
            if before.state == .suspended && after.state == .suspended && after.since == before.since && after.wakes == before.wakes {
                #expect(state == "T", "voipd reports it suspended since \(after.since) but the kernel says \(state.map { String($0) } ?? "no process")")
                return
            }
            guard MonotonicInstant.now < deadline else {
                Issue.record("never suspended long enough to look at it: \(after)")
                return
            }
        }
    }
}
