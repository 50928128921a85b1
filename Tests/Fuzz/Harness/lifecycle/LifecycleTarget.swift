import Foundation
import VoipdLifecycle
import VoipdVocabulary

/// The lifecycle machine fed input sequences the fuzzer chooses, through its public API only
/// (`handle(_:now:)` and the accessors the invariant checker reads). After every input the
/// lifecycle tests' own ``Invariants`` (compiled in from Tests/VoipdLifecycleTests/Support)
/// must hold, and so must what only a sequence shows:
/// - the resume query agrees with the wake a `socketReady` then performs;
/// - after `shutdown` nothing stops the process again (until it is launched anew);
/// - a lifecycle carried over an upgrade (a `Codable` round trip) behaves exactly as the
///   original from then on.
///
/// Input: a policy byte, the timings (one byte, then one per duration when it asks for
/// them), then steps of three bytes: the input, a delay, and its argument. Timers fire only
/// as the daemon fires them: armed and not cancelled, at their deadline or later, keep-alives
/// up to their tolerance early.
enum FuzzTarget {
    static func run(_ input: [UInt8]) {
        var bytes = FuzzBytes(input)
        var run = LifecycleRun(policy: policy(bytes.byte()), timings: timings(&bytes))
        // Bounded, so that one input stays well under libFuzzer's timeout under ASan.
        while !bytes.isAtEnd && run.inputs < 4000 {
            run.step(&bytes)
        }
        run.feed(.shutdown)
    }

    static func policy(_ bits: UInt8) -> AppPolicy {
        AppPolicy(exitsOnSuspend: bits & 1 != 0, canLaunch: bits & 2 != 0, relaunchOnData: bits & 4 != 0,
                  runsInBackground: bits & 8 != 0, speaksProtocol: bits & 16 == 0, suspendsWhenQuiet: bits & 32 != 0)
    }

    /// Durations a configuration may give (zero included), small and large.
    static let durations: [Duration] = [.zero, .milliseconds(1), .milliseconds(10), .seconds(1), .seconds(5), .seconds(30),
                                        .seconds(600), .seconds(365 * 24 * 3600)]

    /// Every duration at its default (even mode) or each chosen (odd mode).
    static func timings(_ bytes: inout FuzzBytes) -> LifecycleTimings {
        var timings = LifecycleTimings()
        guard bytes.byte() & 1 == 1 else { return timings }
        for (_, keyPath) in LifecycleTimings.durations {
            let choice = Int(bytes.byte())
            if choice < durations.count { timings[keyPath: keyPath] = durations[choice] }
        }
        // A configuration says 0 for "never".
        let reclaim = Int(bytes.byte())
        timings.reclaimAfterSuspension = reclaim < durations.count && reclaim > 0 ? durations[reclaim] : nil
        return timings
    }
}

/// One lifecycle and what the daemon driving it would know: the clock, the timers it armed,
/// and the invariant checker's memory.
struct LifecycleRun {
    var app: AppLifecycle
    /// The lifecycle as decoded after an upgrade; from then on fed the same inputs.
    var upgraded: AppLifecycle?
    var now: MonotonicInstant = .origin + .seconds(1000)
    var memory = Invariants.Memory()
    /// Deadlines of the timers the lifecycle started and has not cancelled.
    var timers: [LifecycleTimer: MonotonicInstant] = [:]
    /// How early each may fire (the daemon's rule, `LifecycleTimings.tolerance`).
    var tolerances: [LifecycleTimer: Duration] = [:]
    var shutDown = false
    /// Inputs fed so far.
    var inputs = 0
    /// The next transfer delivery's id: the daemon's transfer engine numbers them in order.
    var nextDelivery: UInt64 = 1

    init(policy: AppPolicy, timings: LifecycleTimings) {
        app = AppLifecycle(timings: timings, policy: policy)
    }

    /// VOIPD_FUZZ_TRACE=1 prints every input and its actions (to read a finding).
    static let tracing = getenv("VOIPD_FUZZ_TRACE") != nil

    static let delays: [Duration] = [.zero, .milliseconds(1), .milliseconds(500), .seconds(1), .seconds(4), .seconds(11),
                                     .seconds(61), .seconds(301), .seconds(3600)]
    static let socketNames = ["sip", "presence", ""]

    mutating func step(_ bytes: inout FuzzBytes) {
        let choice = bytes.byte()
        let timing = bytes.byte()
        let argument = bytes.byte()
        // The daemon fires due timers before it reads what came later, unless both are in
        // the same turn of its loop: then the input may come first, with the timer overdue.
        advance(by: Self.delays[Int(timing & 0x0f) % Self.delays.count], firingTimers: timing & 0x80 == 0)
        switch choice % 32 {
        case 0 where argument & 0x80 != 0:
            // With or without the keep-alive the dead voipd recorded: due ahead, passed, or not known.
            let delay = Self.delays[Int(argument >> 2 & 0x0f) % Self.delays.count]
            let due: [MonotonicInstant?] = [nil, now + delay, .origin + (now.sinceOrigin - min(delay, now.sinceOrigin)), nil]
            let keepAlive = argument & 0x40 == 0 ? nil
                : RecordedKeepAlive(interval: Self.delays[Int(argument) % Self.delays.count], due: due[Int(argument & 0x03)])
            feed(.takenBackSuspended(reason: "fuzz", keepAlive: keepAlive))
        case 0: feed(.launched(inBackground: argument & 1 == 1, reason: "fuzz"))
        case 1: feed(.launchFailed("fuzz"))
        case 2: feed(.connected)
        case 3: feed(.disconnected)
        case 4: feed(.foregroundRequested)
        case 5: feed(.backgroundRequested)
        case 6: feed(.interruptionBegan)
        case 7: feed(.interruptionEnded)
        case 8: feed(.acknowledged(eventID: app.inFlight?.id ?? UInt64(argument)))
        case 9: feed(.acknowledged(eventID: UInt64(argument)))
        case 10 where argument & 0x80 != 0: feed(.stopFailed("fuzz"))
        case 10: feed(.stopConfirmed)
        case 11:
            let readiness = SocketReadiness(name: Self.socketNames[Int(argument) % Self.socketNames.count],
                                            bytesAvailable: Int(argument >> 2), peerClosed: argument & 2 != 0)
            let resumes = app.resumesOnSocketReady
            let actions = feed(.socketReady(readiness))
            require(resumes == actions.contains(.resume), "resumesOnSocketReady said \(resumes), the wake did \(actions)")
        case 12:
            let ends: [ProcessEnd] = [.exited(code: 0), .exited(code: Int32(argument)), .signaled(signal: 9, name: "SIGKILL"),
                                      .signaled(signal: 11, name: "SIGSEGV"), .unknown]
            feed(.processExited(ends[Int(argument) % ends.count]))
        case 13: feed(.beginBackgroundTask(name: "task \(argument)"))
        case 14:
            let open = app.openTasks.keys.sorted()
            feed(.endBackgroundTask(id: open.isEmpty || argument & 1 == 1 ? UInt64(argument >> 1) : open[Int(argument >> 1) % open.count]))
        case 15: feed(.setKeepAlive(argument == 0 ? nil : FuzzTarget.durations[Int(argument) % FuzzTarget.durations.count]))
        case 16, 17: fireEarliestTimer()
        case 18: feed(.terminateRequested)
        case 19 where argument & 0x80 != 0: feed(.resumeFailed("fuzz"))
        case 19: feed(.killRequested)
        case 20: feed(.memoryPressureKill)
        case 21: feed(.reclaimRequested)
        case 22: feed(.screenLocked)
        case 23: feed(.screenUnlocked)
        case 24: feed(.heldSocketsChanged([0, 1, 2, 3, 253][Int(argument) % 5]))
        case 25: feed(.shutdown)
        case 26: upgrade()
        case 27: feed(.policyChanged(FuzzTarget.policy(argument)))
        case 28: feed(.hibernateRequested)
        case 29: feed(.quietMeasured)
        case 30: feed(.setAudioSessionActive(argument & 1 == 1))
        case 31:
            feed(.transferEventsReady(delivery: nextDelivery))
            nextDelivery += 1
        default: fireEarliestTimer()
        }
    }

    /// The choice of `step` that feeds `input`. Never called: its switch has no default, so
    /// an input added to the machine fails the harness's build here until `step` feeds it.
    static func choice(feeding input: LifecycleInput) -> [Int] {
        switch input {
        case .launched: [0]
        case .takenBackSuspended: [0]
        case .launchFailed: [1]
        case .connected: [2]
        case .disconnected: [3]
        case .foregroundRequested: [4]
        case .backgroundRequested: [5]
        case .interruptionBegan: [6]
        case .interruptionEnded: [7]
        case .acknowledged: [8, 9]
        case .stopConfirmed, .stopFailed: [10]
        case .socketReady: [11]
        case .processExited: [12]
        case .beginBackgroundTask: [13]
        case .endBackgroundTask: [14]
        case .setKeepAlive: [15]
        case .timerFired: [16, 17]
        case .terminateRequested: [18]
        case .killRequested, .resumeFailed: [19]
        case .memoryPressureKill: [20]
        case .reclaimRequested: [21]
        case .screenLocked: [22]
        case .screenUnlocked: [23]
        case .heldSocketsChanged: [24]
        case .shutdown: [25]
        case .policyChanged: [27]
        case .hibernateRequested: [28]
        case .quietMeasured: [29]
        case .setAudioSessionActive: [30]
        case .transferEventsReady: [31]
        }
    }

    mutating func advance(by delay: Duration, firingTimers: Bool) {
        let target = now + delay
        var fired = 0
        var firedNow = 0
        while firingTimers, let deadline = timers.values.min(), deadline <= target {
            let before = now
            fireEarliestTimer()
            // A timer that keeps coming back without the clock moving would have the daemon
            // spin at full speed forever.
            firedNow = now == before ? firedNow + 1 : 0
            require(firedNow < 100, "timers keep firing at \(now) in \(app.phase): \(timers)")
            // A short period the configuration allows (1 ms) costs time, not correctness.
            fired += 1
            if fired == 64 { break }
        }
        now = target
    }

    /// Feeds one input as the daemon does and checks everything that must hold after it.
    @discardableResult
    mutating func feed(_ input: LifecycleInput) -> [LifecycleAction] {
        let before = app
        let outcome = app.handle(input, now: now)
        let actions = outcome.actions
        inputs += 1
        if Self.tracing {
            print("\(now.sinceOrigin.seconds) s, \(before.phase): \(input) → \(app.phase) \(outcome.steps)")
            fflush(nil)
        }
        let violations = Invariants.violations(before: before, input: input, outcome: outcome, after: app, memory: memory)
        require(violations.isEmpty, "\(input) in \(before.phase): \(violations.joined(separator: "; "))")
        memory = Invariants.remember(memory, input: input, actions: actions, after: app)

        // What waits to be sent is bounded: a few kinds, one socket report per socket. Transfer
        // deliveries are counted apart: each is a distinct batch of tasks (the engine puts a
        // task in one delivery at a time and allows maximumTasksPerApp), so the lifecycle must
        // keep each once and lose none, however many the engine has outstanding.
        let transferDeliveries = app.outbox.filter { $0.kind == .backgroundTransferEvents }.map(\.delivery)
        let others = app.outbox.count - transferDeliveries.count
        require(others <= 8, "\(others) events queued: \(app.outbox.map(\.kind))")
        require(Set(transferDeliveries).count == transferDeliveries.count && !transferDeliveries.contains(nil),
                "transfer deliveries queued twice or without an id: \(transferDeliveries)")
        if input == .shutdown { shutDown = true }
        if case .launched = input, !outcome.isRejected { shutDown = false }
        if case .takenBackSuspended = input, !outcome.isRejected { shutDown = false }
        if shutDown {
            require(!actions.contains(.suspend) && !app.phase.isStopped, "\(input) after shutdown stopped the app: \(actions)")
        }
        for action in actions {
            switch action {
            case .startTimer(let timer, let after):
                timers[timer] = now + after
                tolerances[timer] = app.timings.tolerance(of: timer, after: after)
            case .cancelTimer(let timer): timers[timer] = nil
            default: break
            }
        }
        if var copy = upgraded {
            let copied = copy.handle(input, now: now)
            require(copied == outcome, "after an upgrade \(input) gives \(copied), the original \(outcome)")
            require(Self.sameState(copy, app), "after an upgrade \(input) leaves \(copy.phase), the original \(app.phase)")
            upgraded = copy
        }
        return actions
    }

    /// Fires the timer due first, as the daemon's timerfd would, and with it those within
    /// their tolerance of their deadline (keep-alives share a wake-up that happens anyway).
    mutating func fireEarliestTimer() {
        guard let (timer, deadline) = timers.min(by: { ($0.value, $0.key.rawValue) < ($1.value, $1.key.rawValue) }) else { return }
        now = max(now, deadline)
        let early = timers.filter { other, deadline in
            let tolerance = tolerances[other] ?? .zero
            return other != timer && tolerance > .zero && deadline - tolerance <= now
        }.keys
        timers[timer] = nil
        feed(.timerFired(timer))
        for other in early.sorted(by: { $0.rawValue < $1.rawValue }) where timers[other] != nil {
            timers[other] = nil
            feed(.timerFired(other))
        }
    }

    /// What an in-place upgrade of the daemon does to each app: encode, decode, go on.
    mutating func upgrade() {
        let decoded: AppLifecycle
        do {
            decoded = try JSONDecoder().decode(AppLifecycle.self, from: JSONEncoder().encode(upgraded ?? app))
        } catch {
            finding("the lifecycle in \(app.phase) does not survive an upgrade: \(error)")
        }
        require(Self.sameState(decoded, app), "an upgrade changed the lifecycle in \(app.phase) to \(decoded.phase)")
        upgraded = decoded
    }

    static func sameState(_ a: AppLifecycle, _ b: AppLifecycle) -> Bool {
        a.phase == b.phase && a.goal == b.goal && a.connection == b.connection && a.inFlight == b.inFlight
            && a.outbox == b.outbox && a.pendingTermination == b.pendingTermination && a.timings == b.timings && a.policy == b.policy
    }
}

extension FuzzTarget {
    /// A few sequences through the common paths; the fuzzer finds the rest.
    static var seeds: [(String, [UInt8])] {
        // Steps: (input, delay, argument); the delay's low nibble indexes `delays`.
        func run(_ policy: UInt8, _ steps: [(UInt8, UInt8, UInt8)]) -> [UInt8] {
            [policy, 0] + steps.flatMap { [$0.0, $0.1, $0.2] }
        }
        let launch: [(UInt8, UInt8, UInt8)] = [(24, 0, 1), (0, 0, 0), (2, 0, 0)]
        let acknowledge: (UInt8, UInt8, UInt8) = (8, 1, 0)
        return [
            ("voip-app", run(2, launch + [acknowledge, (5, 3, 0), acknowledge, (10, 1, 0), (11, 6, 4), acknowledge, (17, 0, 0), (10, 0, 0)])),
            ("keep-alive", run(2, launch + [(15, 0, 6), (5, 0, 0), acknowledge, (10, 0, 0), (17, 0, 0), acknowledge, (26, 0, 0), (17, 0, 0)])),
            ("background-task", run(2, launch + [(13, 0, 0), (5, 0, 0), acknowledge, (17, 0, 0), (17, 0, 0), (14, 0, 0)])),
            ("interruption", run(2, launch + [(6, 0, 0), acknowledge, (7, 1, 0), acknowledge, (18, 0, 0), acknowledge, (12, 0, 0)])),
            ("crash-relaunch", run(2, launch + [(5, 0, 0), acknowledge, (10, 0, 0), (12, 5, 3), (11, 0, 4), (0, 0, 1), (2, 0, 0)])),
            ("silent-app", run(2 | 16, launch + [(5, 0, 0), (10, 0, 0), (22, 0, 0), (11, 0, 0), (17, 0, 0), (19, 0, 0), (12, 0, 2)])),
            ("exits-on-suspend", run(3, launch + [(5, 0, 0), acknowledge, (17, 0, 0), (12, 0, 0)])),
        ]
    }
}
