import Foundation
import Glibc
import Testing
import VoipClient
import VoipdProtocol
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// linphonec, the softphone where suspension pays most (it polls every 10 ms even idle),
/// adopted by voipd end to end as the baresip tests do it: launched from a manifest, its one
/// UDP SIP socket held, suspended once measured quiet, and woken by the INVITEs of real calls.
@Suite("voipd adopting linphonec", .serialized,
       .softphonesInPrivateNetwork(linphonec: true))
struct AdoptedLinphonecTests {
    @Test("linphonec adopted over UDP (sip:port=5070, quiet below 150 wake-ups/s): suspended once quiet, it runs not once while suspended; 3 calls in a row each ring and are answered, it stays resumed through each call and is suspended after it, no ghost call",
          .timeLimit(.minutes(4)))
    func callsToASuspendedLinphonec() throws {
        let network = try PrivateNetwork(defaultRoute: true)
        defer { network.stop() }
        try NamespacedKamailio.start(in: network, port: 5060)
        let (command, home) = try Linphonec.prepare(in: network, sipPort: 5070, registrarPort: 5060, user: "carol")
        // linphonec reads commands from its standard input and quits at its end: a FIFO the
        // test holds open (read and write, so that opening it waits for nobody).
        let input = network.directory + "/linphonec.in"
        guard mkfifo(input, 0o600) == 0 else { throw Errno.current("mkfifo") }
        let commands = try openFile(input, flags: O_RDWR)
        let output = network.directory + "/linphonec.out"
        // Its SIP port is its own choice (5070 here); idle it wakes 100 times a second, in a
        // call 200: 150 tells them apart (docs/BENCHMARKS.md).
        let apps = try network.writeManifest(app: "carol", command: command, redirections: "<\(input) >>\(output) 2>&1",
                                             keys: ["environment": ["HOME": home], "adopt": ["sip:port=5070"],
                                                    "quietWindowSeconds": 2, "quietWakeupsPerSecond": 150])
        let harness = try DaemonHarness(arguments: ["--apps-directory", apps])
        defer { harness.stop() }
        let log = network.directory + "/" + Linphonec.log
        _ = try harness.control.launchManifest("carol")
        try waitForText("LinphoneRegistrationOk", in: log, timeout: .seconds(30))
        try harness.suspend("carol", timeout: .seconds(30))
        let pid = try #require(try harness.status("carol").pid)
        let adoption = try #require(try harness.status("carol").adoption)
        #expect(adoption.warning == nil, "\(adoption)")
        #expect(adoption.adopted.count == 1 && adoption.adopted.allSatisfy { $0.contains(":5070") && !$0.contains("not held") },
                "its one SIP socket, held: \(adoption)")

        for round in 1...3 {
            #expect(ProcFS.state(of: pid) == "T", "suspended before call \(round)")
            try expectNoActivity(below: pid, over: .seconds(2))
            // The caller's own 15 s wait for "Call established" is the test that the call
            // rang and was answered: a suspended linphonec that is not woken never answers.
            let caller = try Baresip(in: network, name: "dave\(round)", sipPort: UInt16(5080 + 2 * round), user: "dave",
                                     transport: "udp", dial: "sip:carol@127.0.0.1")
            let establishedSeen = wallClockSeconds()
            // Its media ticker takes it to 200 wake-ups a second: not quiet while the call lasts.
            try expectRunningThroughTheCall(of: "carol", in: harness, establishedSeen: establishedSeen, for: .seconds(3))
            try caller.process.pidfd.send(SIGTERM)
            _ = try caller.process.waitForExit(.seconds(10))
            try harness.waitForState("carol", .suspended, timeout: .seconds(30))
        }
        // liblinphone logs each call's states: rung (IncomingReceived), answered (Connected).
        let states = network.read(Linphonec.log)
        let rang = states.components(separatedBy: "to LinphoneCallIncomingReceived").count - 1
        let answered = states.components(separatedBy: "to LinphoneCallConnected").count - 1
        #expect(rang == 3 && answered == 3, "one call rung and answered per call made, no ghost call: \(rang) rung, \(answered) answered")
        #expect(try harness.status("carol").pid == pid, "the same linphonec throughout")
        withExtendedLifetime(commands) {}
    }

    /// No thread of the tree below `pid` ran over `interval` (a measurement over time, not a
    /// synchronisation: the interval has to pass).
    private func expectNoActivity(below pid: pid_t, over interval: Duration) throws {
        let processes = try ProcessTree.below(pid, limit: 64).processes
        let first = ProcFS.activity(of: processes)
        let end = first.instant + interval
        while MonotonicInstant.now < end { _ = poll(nil, 0, pollTimeout(until: end)) }
        let activity = ProcFS.activity(of: processes).since(first)
        #expect(activity.runs == 0 && activity.cpuTime == .zero, "suspended, it should not run at all: \(activity)")
    }

    /// `app`, woken for a call the caller saw established at `establishedSeen`, runs from
    /// then on for `interval` (the daemon would report a transition at once). Its transitions
    /// stamped before that are the call's set-up: woken by the INVITE, and on a loaded machine
    /// perhaps measured quiet and suspended while the set-up went on for longer than its 2 s
    /// window (the ACK wakes it again); the last of them must leave it running, and none after.
    private func expectRunningThroughTheCall(of app: String, in harness: DaemonHarness, establishedSeen: Double,
                                             for interval: Duration) throws {
        var woken = false
        var beforeTheCall: TransitionRecord?
        let deadline = Deadline(interval)
        while !deadline.hasPassed {
            guard let record = try? harness.nextTransition(timeout: .milliseconds(Int64(max(1, deadline.remainingMilliseconds)))),
                  record.app == app else { continue }
            if record.time < establishedSeen {
                if record.from == .suspended && record.to == .background { woken = true }
                beforeTheCall = record
                continue
            }
            #expect(record.to != .suspended && record.to != .terminated,
                    "\(app) went \(record.from.rawValue) → \(record.to.rawValue) (\(record.reason)) in a call, \(record.time - establishedSeen) s after it was seen established")
        }
        #expect(woken, "woken for the call")
        #expect(beforeTheCall.map { $0.to == .background } == true,
                "when the call was seen established its last transition was \(beforeTheCall.map { "\($0.from.rawValue) → \($0.to.rawValue): \($0.reason)" } ?? "none")")
    }
}
