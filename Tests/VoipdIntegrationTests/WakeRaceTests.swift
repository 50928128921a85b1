import Glibc
import Testing
import VoipdSystem
import VoipdVocabulary

/// Issue 10, part 1: an app that reads its VoIP socket whenever it is readable can read data
/// that arrives after its acknowledgement and before the stop lands, and be stopped half-way
/// through handling it. Whatever arrived after the app was last told must wake it after the
/// stop, even if it read it meanwhile.
@Suite("The wake race", .serialized)
struct WakeRaceTests {
    static let rounds = 1500

    @Test("data read between the acknowledgement and the stop wakes the app again: 1500 rounds, none lost")
    func readBetweenAcknowledgementAndStop() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let peer = try harness.makePeer()
        // The app answers each message after handling it for 100 µs: a stop landing in that
        // time leaves it read and unanswered.
        let (app, remote) = try WakePathTests.appWithVoIPSocket(harness, "phone", peer: peer, arguments: ["--echo", "100"])
        // An echoing app reports no events: the state says when it is asleep.
        try harness.control.command(.background, app.name)
        try harness.waitForState(app.name, .suspended)

        var answers = Answers(remote)
        var generator = SystemRandomNumberGenerator()
        for round in 0..<Self.rounds {
            // Token A wakes the app (or reaches it while it is still on its way to sleep);
            // token B follows 0–400 µs after A's answer, around the acknowledgement and the stop.
            try remote.write("A\(round);")
            try answers.expect("A\(round);", round: round)
            spin(for: .microseconds(Int.random(in: 0...400, using: &generator)))
            try remote.write("B\(round);")
            try answers.expect("B\(round);", round: round)
        }
        let wakes = try harness.status("phone").wakes
        #expect(wakes >= Self.rounds / 2, "the rounds were meant to wake the app, not to find it running: \(wakes) wakes")
        try harness.waitForState("phone", .suspended)
    }

    /// The answers from the app, read as they come.
    struct Answers {
        let connection: PeerConnection
        var received = ""

        init(_ connection: PeerConnection) { self.connection = connection }

        /// Waits for `token` as the next answer; a lost wake leaves it unanswered.
        mutating func expect(_ token: String, round: Int) throws {
            let deadline = Deadline(.seconds(10))
            while received.count < token.count {
                guard !deadline.hasPassed, let text = try connection.read(timeout: .milliseconds(Int(deadline.remainingMilliseconds))) else {
                    throw TimedOut(description: "round \(round): \(token) never answered (lost wake-up); received \(received.debugDescription)")
                }
                guard !text.isEmpty else { throw TimedOut(description: "round \(round): the app closed the connection") }
                received += text
            }
            #expect(received.hasPrefix(token), "round \(round): expected \(token), got \(received)")
            received.removeFirst(token.count)
        }
    }
}

/// Busy-waits: the test's own timing of what it sends (a sleep would be rounded to the
/// timer slack, far above the microseconds asked for).
private func spin(for duration: Duration) {
    let end = MonotonicInstant.now + duration
    while MonotonicInstant.now < end {}
}
