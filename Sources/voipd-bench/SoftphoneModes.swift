import VoipClient
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// Moves the softphone between the two modes of the benchmark through voipd, and waits on
/// voipd's event stream (followed for moves to `active`, `suspended` and `terminated`
/// only) until it is there.
final class SoftphoneModes {
    enum Mode: String {
        /// In the foreground: voipd never stops it.
        case running
        /// In the background, stopped by voipd (kernel state T) until data arrives.
        case suspended
    }

    let control: VoipdControl
    /// The app moved: the softphone, or an adopted program.
    let app: String
    private(set) var mode = Mode.running
    private static let timeoutMilliseconds: Int32 = 10_000

    /// Follows the event stream from now on: open it before launching the softphone.
    init(socketPath: String, app: String = SoftphoneUnderTest.name) throws {
        self.app = app
        control = try VoipdControl(socketPath: socketPath)
        // Not by name: voipd knows no app of that name before the launch.
        _ = try control.events(follow: true, to: [.active, .suspended, .terminated])
    }

    /// Once the softphone has registered: it must be active (launched in the foreground).
    /// Its launch's own transitions are dropped, so that only later ones are waited for.
    func confirmRunning() throws {
        let state = try control.app(app).state
        guard state == .active else { throw BenchError("\(app) is \(state.rawValue), not active, after its launch") }
        // The status reply came after every transition before it, on this same connection.
        while try control.nextTransition(timeoutMilliseconds: 0) != nil {}
        mode = .running
    }

    /// Into `target`, if it is not there yet.
    func enter(_ target: Mode) throws {
        guard target != mode else { return }
        switch target {
        case .running:
            // SIGCONT, willEnterForeground, didBecomeActive.
            try control.command(.foreground, app)
            try waitFor(.active, "foregrounded")
        case .suspended:
            // willResignActive, didEnterBackground, then SIGSTOP once no background task is left.
            try control.command(.background, app)
            try waitFor(.suspended, "backgrounded")
        }
        mode = target
    }

    /// After a call to the suspended softphone: voipd resumed it for the INVITE; its call's
    /// background task ended with the call, and voipd stops it again.
    func waitForSuspensionAfterCall() throws {
        try waitFor(.suspended, "after the call")
    }

    /// Until voipd has seen the app end (an adopted program that exited at its start).
    func waitForTermination(_ when: String) throws {
        try waitForTransition("ended", when) { $0.to == .terminated }
    }

    private func waitFor(_ state: AppState, _ when: String) throws {
        try waitForTransition(state.rawValue, when) { record in
            if record.to == .terminated { throw BenchError("\(app) terminated \(when): \(record.reason)") }
            return record.to == state
        }
    }

    /// Reads the app's transitions until `reached` says one is what was awaited (`what`).
    private func waitForTransition(_ what: String, _ when: String, _ reached: (TransitionRecord) throws -> Bool) throws {
        let deadline = MonotonicInstant.now + .milliseconds(Self.timeoutMilliseconds)
        while true {
            guard MonotonicInstant.now < deadline,
                  let record = try control.nextTransition(timeoutMilliseconds: pollTimeout(until: deadline)) else {
                throw BenchError("\(app) was not \(what) within \(Self.timeoutMilliseconds) ms \(when)")
            }
            if record.app == app, try reached(record) { return }
        }
    }
}
