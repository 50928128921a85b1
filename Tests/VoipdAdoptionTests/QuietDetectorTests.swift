import Testing
import VoipdAdoption
import VoipdVocabulary

/// A process tree's threads as the detector sees them, advanced by simulated time.
private struct SimulatedTree {
    var now = MonotonicInstant(sinceOrigin: .seconds(1000))
    var threads: [Int32: ActivitySample.ThreadCounters] = [1: .init(runs: 10, cpuTime: .milliseconds(50))]

    /// `seconds` pass with the thread `tid` waking `perSecond` times and using `cpu` of CPU a second.
    mutating func run(_ seconds: Int, thread tid: Int32 = 1, wakeupsPerSecond perSecond: UInt64, cpuPerSecond cpu: Duration = .zero) {
        now += .seconds(seconds)
        var counters = threads[tid] ?? .init(runs: 0, cpuTime: .zero)
        counters.runs += perSecond * UInt64(seconds)
        counters.cpuTime += cpu * seconds
        threads[tid] = counters
    }

    var sample: ActivitySample { ActivitySample(instant: now, threads: threads) }
}

/// Runs `tree` second by second, waking `wakeupsPerSecond` times a second: `detector` (with
/// the default 5 s window) finds it quiet at the fifth second, not before.
private func expectQuietAfterAWholeWindow(_ tree: inout SimulatedTree, _ detector: inout QuietDetector, wakeupsPerSecond: UInt64,
                                          sourceLocation: SourceLocation = #_sourceLocation) {
    for second in 1...5 {
        tree.run(1, wakeupsPerSecond: wakeupsPerSecond)
        #expect(detector.observe(tree.sample, unreadSockets: 0).isQuiet == (second == 5), "second \(second)", sourceLocation: sourceLocation)
    }
}

@Suite("Quiet detector")
struct QuietDetectorTests {
    @Test("an idle program is quiet once a whole window has passed, not before")
    func idle() {
        var tree = SimulatedTree()
        var detector = QuietDetector()
        guard case .measuring(let until) = detector.observe(tree.sample, unreadSockets: 0) else {
            Issue.record("a single sample decided")
            return
        }
        #expect(until == tree.now + .seconds(5))
        expectQuietAfterAWholeWindow(&tree, &detector, wakeupsPerSecond: 1)
    }

    @Test("a call's audio thread, waking every 20 ms on a new thread, keeps it busy for as long as the call lasts")
    func call() {
        var tree = SimulatedTree()
        var detector = QuietDetector()
        _ = detector.observe(tree.sample, unreadSockets: 0)
        for second in 0..<60 {
            tree.run(1, thread: 2, wakeupsPerSecond: 50, cpuPerSecond: .milliseconds(2))
            let verdict = detector.observe(tree.sample, unreadSockets: 0)
            #expect(!verdict.isQuiet, "second \(second): \(verdict)")
            if second >= 5, case .busy(let activity) = verdict { #expect(activity.runsPerSecond == 50) }
        }
        // The call ends: its thread is gone; quiet a whole window later, not sooner.
        tree.threads[2] = nil
        expectQuietAfterAWholeWindow(&tree, &detector, wakeupsPerSecond: 0)
    }

    @Test("a burst keeps it busy until it has slid out of the window; CPU alone counts too")
    func burstAndCPU() {
        var tree = SimulatedTree()
        var detector = QuietDetector()
        _ = detector.observe(tree.sample, unreadSockets: 0)
        tree.run(1, wakeupsPerSecond: 500)
        _ = detector.observe(tree.sample, unreadSockets: 0)
        var quietAfter = 0
        while !detector.observe(tree.sample, unreadSockets: 0).isQuiet {
            tree.run(1, wakeupsPerSecond: 0)
            quietAfter += 1
        }
        #expect(quietAfter == 5, "the burst's second left the window")
        // A computation that is never preempted: few wake-ups, much CPU.
        for _ in 0..<5 {
            tree.run(1, wakeupsPerSecond: 2, cpuPerSecond: .milliseconds(900))
        }
        guard case .busy(let activity) = detector.observe(tree.sample, unreadSockets: 0) else {
            Issue.record("a CPU-bound program was quiet")
            return
        }
        #expect(activity.cpuPerSecond == .milliseconds(900))
    }

    @Test("unread data on an adopted socket is never quiet; restart forgets the past")
    func unreadAndRestart() {
        var tree = SimulatedTree()
        var detector = QuietDetector(thresholds: QuietThresholds(window: .seconds(2)))
        for _ in 0..<3 {
            _ = detector.observe(tree.sample, unreadSockets: 0)
            tree.run(1, wakeupsPerSecond: 0)
        }
        #expect(detector.observe(tree.sample, unreadSockets: 1) == .unreadData(sockets: 1))
        #expect(detector.observe(tree.sample, unreadSockets: 0).isQuiet)
        detector.restart()
        tree.run(1, wakeupsPerSecond: 0)
        #expect(detector.observe(tree.sample, unreadSockets: 0) == .measuring(until: tree.now + .seconds(2)))
    }

    @Test("linphonec polling every 10 ms is busy at the defaults; at 150 wake-ups/s it is quiet idle and busy in a call")
    func linphonec() {
        var idle = SimulatedTree(), inCall = SimulatedTree()
        var defaults = QuietDetector()
        var raised = QuietDetector(thresholds: QuietThresholds(wakeupsPerSecond: 150))
        var raisedInCall = raised
        for _ in 0...5 {
            _ = defaults.observe(idle.sample, unreadSockets: 0)
            _ = raised.observe(idle.sample, unreadSockets: 0)
            _ = raisedInCall.observe(inCall.sample, unreadSockets: 0)
            // Measured: 97 wake-ups and 6.9 ms a second idle; 198 and 14.4 ms in a call.
            idle.run(1, wakeupsPerSecond: 97, cpuPerSecond: .microseconds(6900))
            inCall.run(1, wakeupsPerSecond: 198, cpuPerSecond: .microseconds(14400))
        }
        #expect(!defaults.observe(idle.sample, unreadSockets: 0).isQuiet)
        #expect(raised.observe(idle.sample, unreadSockets: 0).isQuiet)
        #expect(!raisedInCall.observe(inCall.sample, unreadSockets: 0).isQuiet)
    }

    @Test("linphonec in a call kept waiting for a CPU (measured: 110 wake-ups/s, 890 ms/s waiting for a CPU under load) is busy at 150 wake-ups/s; idle as starved it is busy too: starved, it cannot be judged")
    func starvedCall() {
        // Two 10 ms loops (its main loop and the media ticker): each sleeps 10 ms between
        // runs, and waits about 8 ms for a CPU before each run.
        func starved(_ tree: inout SimulatedTree, loops: Int32) {
            tree.now += .seconds(1)
            for thread in 1...loops {
                var counters = tree.threads[thread] ?? .init(runs: 0, cpuTime: .zero)
                counters.runs += 55
                counters.cpuTime += .microseconds(2500)
                counters.waiting += .milliseconds(440)
                tree.threads[thread] = counters
            }
        }
        var inCall = SimulatedTree(), idle = SimulatedTree()
        var detector = QuietDetector(thresholds: QuietThresholds(window: .seconds(2), wakeupsPerSecond: 150))
        var idleDetector = detector
        _ = detector.observe(inCall.sample, unreadSockets: 0)
        _ = idleDetector.observe(idle.sample, unreadSockets: 0)
        for second in 0..<10 {
            starved(&inCall, loops: 2)
            starved(&idle, loops: 1)
            let verdict = detector.observe(inCall.sample, unreadSockets: 0)
            let idleVerdict = idleDetector.observe(idle.sample, unreadSockets: 0)
            // A window's worth of samples from the second second on. Idle, its wake-ups are
            // below the threshold (97 a second unstarved), but it waited 440 ms a second
            // for a CPU: starved, busy.
            guard second >= 1 else { continue }
            if case .busy(let activity) = idleVerdict {
                #expect(activity.unstarvedRunsPerSecond < 150 && activity.waitingPerSecond == .milliseconds(440), "\(activity)")
            } else {
                Issue.record("second \(second): idle and starved was \(idleVerdict)")
            }
            guard case .busy(let activity) = verdict else {
                Issue.record("second \(second): a starved call was \(verdict)")
                continue
            }
            #expect(activity.runsPerSecond == 110)
            #expect(activity.unstarvedRunsPerSecond > 190 && activity.unstarvedRunsPerSecond < 200, "\(activity)")
        }
    }

    @Test("idle on a busy machine (97 wake-ups/s, each waiting 1 ms for a CPU) it is quiet; from 250 ms/s of waiting it is starved, busy")
    func waitingBelowStarved() {
        func idle(_ tree: inout SimulatedTree, waiting: Duration) {
            tree.now += .seconds(1)
            var counters = tree.threads[1] ?? .init(runs: 0, cpuTime: .zero)
            counters.runs += 97
            counters.cpuTime += .milliseconds(3)
            counters.waiting += waiting
            tree.threads[1] = counters
        }
        for (waiting, quiet) in [(Duration.milliseconds(97), true), (.milliseconds(249), true), (.milliseconds(250), false)] {
            var tree = SimulatedTree()
            var detector = QuietDetector(thresholds: QuietThresholds(window: .seconds(2), wakeupsPerSecond: 150))
            _ = detector.observe(tree.sample, unreadSockets: 0)
            var verdict = QuietVerdict.unreadData(sockets: 0)
            for _ in 0..<3 {
                idle(&tree, waiting: waiting)
                verdict = detector.observe(tree.sample, unreadSockets: 0)
            }
            #expect(verdict.isQuiet == quiet, "waiting \(waiting) a second: \(verdict)")
        }
    }

    @Test("a thread's runs scaled by the part of the interval it slept; one that never slept counts at most 1000 times; waiting shows in the description")
    func unstarvedRuns() {
        let earlier = ActivitySample(instant: .origin, threads: [1: .init(runs: 0, cpuTime: .zero, waiting: .zero),
                                                                 2: .init(runs: 0, cpuTime: .zero, waiting: .zero)])
        let later = ActivitySample(instant: .origin + .seconds(1),
                                   threads: [1: .init(runs: 50, cpuTime: .milliseconds(100), waiting: .milliseconds(400)),
                                             2: .init(runs: 2, cpuTime: .milliseconds(500), waiting: .milliseconds(600))])
        let activity = later.since(earlier)
        #expect(activity.runs == 52)
        #expect(activity.waiting == .seconds(1))
        // Thread 1 slept 500 ms: 100 runs a second of sleep; thread 2 never slept: 2000.
        #expect(activity.unstarvedRuns == 2100)
        #expect(activity.description == "52.0 wake-ups/s, 600.00 ms CPU/s over 1.00 s, waiting 1000.00 ms/s for a CPU (2100.0 wake-ups/s unstarved)")
    }

    @Test("a thread id reused by a new thread counts from its start; a thread that ended counts no more")
    func threadChurn() {
        let earlier = ActivitySample(instant: .origin, threads: [1: .init(runs: 100, cpuTime: .seconds(1)), 2: .init(runs: 5, cpuTime: .zero)])
        let later = ActivitySample(instant: .origin + .seconds(1), threads: [1: .init(runs: 3, cpuTime: .milliseconds(1)), 3: .init(runs: 7, cpuTime: .zero)])
        let activity = later.since(earlier)
        #expect(activity.runs == 10)
        #expect(activity.cpuTime == .milliseconds(1))
        #expect(activity.description == "10.0 wake-ups/s, 1.00 ms CPU/s over 1.00 s")
    }
}
