import Testing
import VoipdLifecycle
import VoipdVocabulary

/// What one input does to an app in one phase: where it ends and the steps it takes.
struct Expect: Sendable, CustomStringConvertible {
    /// The phase afterwards; nil: unchanged.
    var phase: LifecyclePhase?
    var steps: [Step]
    /// The termination reason recorded afterwards, when the input records one.
    var recorded: TerminationReason.Code?

    static let nothing = Expect(phase: nil, steps: [])
    static let rejected = Expect(phase: nil, steps: [.rejected])
    static func stay(_ steps: [Step]) -> Expect { Expect(phase: nil, steps: steps) }
    static func to(_ phase: LifecyclePhase, _ steps: [Step]) -> Expect { Expect(phase: phase, steps: steps) }

    func recording(_ code: TerminationReason.Code) -> Expect {
        var copy = self
        copy.recorded = code
        return copy
    }

    var description: String { "\(phase.map { "→ \($0)" } ?? "stays") \(steps)" }
}

/// One cell of the matrix: the expectation for an app with a control connection, and for
/// one without (``AppPolicy/silentApp``), which differ only where events are sent.
struct Cell: Sendable {
    var connected: Expect
    var unconnected: Expect

    init(_ both: Expect) {
        connected = both
        unconnected = both
    }

    static let nothing = Cell(.nothing)
    static let rejected = Cell(.rejected)
    static func stay(_ steps: [Step]) -> Cell { Cell(.stay(steps)) }
    static func to(_ phase: LifecyclePhase, _ steps: [Step]) -> Cell { Cell(.to(phase, steps)) }

    /// The same cell, but an app without a connection does `expect` instead.
    func unconnected(_ expect: Expect) -> Cell {
        var copy = self
        copy.unconnected = expect
        return copy
    }

    func recording(_ code: TerminationReason.Code) -> Cell {
        var copy = self
        copy.connected = connected.recording(code)
        copy.unconnected = unconnected.recording(code)
        return copy
    }
}

/// One row of the matrix: an input, and what it does in every phase.
struct MatrixRow: Sendable, CustomTestStringConvertible {
    let input: LifecycleInput
    let cells: [LifecyclePhase: Cell]

    var testDescription: String { "\(input)" }
}

/// A row; the labels name every phase, so a row cannot leave one out.
func row(_ input: LifecycleInput, notRunning: Cell, active: Cell, inactive: Cell, background: Cell,
         suspending: Cell, suspended: Cell, terminated: Cell) -> MatrixRow {
    MatrixRow(input: input, cells: [
        .notRunning: notRunning, .active: active, .inactive: inactive, .background: background,
        .suspending: suspending, .suspended: suspended, .terminated: terminated,
    ])
}

/// Steps that recur in the table.
enum Steps {
    /// An event that announces a state change, sent and watched.
    static func announce(_ kind: AppEventKind, _ from: AppState, _ to: AppState) -> [Step] {
        [.transition(from, to), .deliver(kind), .start(.acknowledgement)]
    }

    /// A stopped app resumed in the background for a wake, with a resumed app's budgets.
    static func wake(from state: AppState) -> [Step] {
        [.resume, .disarm, .start(.wakeBudget), .start(.taskExpirationWarning), .start(.taskBudget)]
            + (state == .background ? [] : [.transition(state, .background)])
    }

    /// didEnterBackground's budget: the first background-task budget starts.
    static let taskBudget: [Step] = [.start(.taskExpirationWarning), .start(.taskBudget)]

    /// Nothing left to do in the background: watched sockets, then the stop.
    static let suspend: [Step] = [.arm, .suspend]

    /// A fresh process; one that speaks the protocol gets time to connect. In the background
    /// it is a wake: the resumed budgets and the wake budget run.
    static func launch(from state: AppState, to phase: LifecyclePhase, connects: Bool) -> [Step] {
        (connects ? [.start(.connect)] : []) + [.disarm, .transition(state, phase.state)]
            + (phase == .background ? taskBudget + [.start(.wakeBudget)] : [])
    }

    /// Going to the foreground from the background: willEnterForeground, then (without a
    /// connection, at once) didBecomeActive.
    static func enterForeground(from state: AppState, stopped: Bool, connected: Bool) -> [Step] {
        (stopped ? [.resume] : []) + [.disarm]
            + (connected ? announce(.willEnterForeground, state, .inactive)
                         : [.transition(state, .inactive), .transition(.inactive, .active)])
    }
}
