import Testing
import VoipdLifecycle
import VoipdVocabulary

/// A lifecycle with a clock, fed the way the daemon feeds it. Every batch is checked against
/// the ``Invariants``; a violation is recorded at the caller's line.
struct Driver {
    private(set) var app: AppLifecycle
    private(set) var now: MonotonicInstant = .at(1000)
    private(set) var memory = Invariants.Memory()

    init(policy: AppPolicy = .voipApp, timings: LifecycleTimings = LifecycleTimings()) {
        app = AppLifecycle(timings: timings, policy: policy)
    }

    var phase: LifecyclePhase { app.phase }
    var timings: LifecycleTimings { app.timings }

    mutating func advance(by delay: Duration) { now += delay }

    /// Replaces the policy, as the daemon does when an app is launched again.
    @discardableResult
    mutating func setPolicy(_ policy: AppPolicy, sourceLocation: SourceLocation = #_sourceLocation) -> LifecycleOutcome {
        feed(.policyChanged(policy), sourceLocation: sourceLocation)
    }

    /// Feeds `input` `after` the given delay and returns the reply and the actions.
    @discardableResult
    mutating func feed(_ input: LifecycleInput, after delay: Duration = .zero,
                       sourceLocation: SourceLocation = #_sourceLocation) -> LifecycleOutcome {
        now += delay
        let before = app
        let outcome = app.handle(input, now: now)
        for violation in Invariants.violations(before: before, input: input, outcome: outcome, after: app, memory: memory) {
            Issue.record("\(input) in \(before.phase): \(violation)", sourceLocation: sourceLocation)
        }
        memory = Invariants.remember(memory, input: input, actions: outcome.actions, after: app)
        return outcome
    }

    /// Acknowledges the event in flight, which must be of `kind`.
    @discardableResult
    mutating func acknowledge(_ kind: AppEventKind, after delay: Duration = .zero,
                              sourceLocation: SourceLocation = #_sourceLocation) -> LifecycleOutcome {
        guard let event = app.inFlight else {
            Issue.record("nothing in flight; expected \(kind)", sourceLocation: sourceLocation)
            return LifecycleOutcome()
        }
        #expect(event.kind == kind, sourceLocation: sourceLocation)
        return feed(.acknowledged(eventID: event.id), after: delay, sourceLocation: sourceLocation)
    }

    /// Acknowledges `kind` when the app has a connection; without one, checks that nothing
    /// waits for an acknowledgement.
    mutating func acknowledgeIfConnected(_ kind: AppEventKind, sourceLocation: SourceLocation = #_sourceLocation) {
        if app.connection == .connected {
            acknowledge(kind, sourceLocation: sourceLocation)
        } else {
            #expect(app.inFlight == nil, sourceLocation: sourceLocation)
        }
    }
}

extension AppPolicy {
    /// A VoIP app voipd launched: it connects, acknowledges, and is relaunched on data.
    static let voipApp = AppPolicy(canLaunch: true)
    /// A program that never connects: suspended and resumed without being told.
    static let silentApp = AppPolicy(canLaunch: true, speaksProtocol: false)
    /// An unmodified program voipd adopted: silent, and suspended only once measured quiet.
    static let adoptedApp = AppPolicy(canLaunch: true, speaksProtocol: false, suspendsWhenQuiet: true)
}
