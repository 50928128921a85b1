import Foundation
import Glibc
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// When a transition happened, as `voipctl events` and `status` say it: a resume is stamped
/// at its SIGCONT (or thaw), not after the bookkeeping that follows it.
@Suite("Transition times", .serialized)
struct TransitionTimeTests {
    /// Reads the wall clock without pause and notes each instant it finds a gap of more than
    /// 2 ms since the last reading: when it was stopped, the first reading after it runs again
    /// (a preemption notes an instant too, but only while it runs, so never one before that).
    static let spinner = """
        import sys, time
        out = open(sys.argv[1], "a", buffering=1)
        out.write("ready\\n")
        last = time.time()
        while True:
            now = time.time()
            if now - last > 0.002: out.write("%.6f\\n" % now)
            last = now
        """

    @Test("a suspended app brought back is stamped no later than its first instant running again, round after round")
    func resumeIsStampedAtTheContinue() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let notes = harness.directory + "/resumed"
        #expect(FileManager.default.createFile(atPath: notes, contents: nil))
        let output = try openFile(harness.directory + "/spinner.log", flags: O_WRONLY | O_CREAT | O_APPEND)
        _ = try harness.control.launch(["/usr/bin/python3", "-c", Self.spinner, notes], name: "spinner", speaksProtocol: false,
                                       output: output.rawValue)
        do { try waitForText("ready", in: notes) } catch { Issue.record("\(error)\nits output:\n\(ProcFS.read(harness.directory + "/spinner.log") ?? "")"); return }
        for round in 1...10 {
            try harness.suspend("spinner")
            // Stopped, it writes nothing: what it writes next is the instant it ran again.
            #expect(truncate(notes, 0) == 0)
            // A line it had timed but not written when the stop came lands after the resume
            // with its old time: only instants after the stop count.
            let stopped = Date().timeIntervalSince1970
            // The program notes only gaps over 2 ms: the stop must last longer than that.
            observe(for: .milliseconds(10))
            try harness.control.command(.foreground, "spinner")
            var resumed = try harness.nextTransition()
            while resumed.app != "spinner" || resumed.from != .suspended { resumed = try harness.nextTransition() }
            // Never truncated while it runs again: the line that counts may follow the old one
            // at once, and a truncation between the two would lose it.
            func firstInstantAfterTheStop(_ text: String) -> Double? {
                text.split(separator: "\n").compactMap { Double($0) }.first { $0 >= stopped }
            }
            guard try waitForContent(of: notes, until: MonotonicInstant.now + .seconds(20), { firstInstantAfterTheStop($0) != nil }) else {
                Issue.record("round \(round): the program never ran again; it noted:\n\(ProcFS.read(notes) ?? "")")
                return
            }
            let ran = try #require(firstInstantAfterTheStop(ProcFS.read(notes) ?? ""))
            #expect(resumed.time <= ran, "round \(round): stamped \(Int((resumed.time - ran) * 1_000_000)) µs after the program ran again")
            try harness.waitForState("spinner", .active)
        }
    }
}
