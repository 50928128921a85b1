import Testing
import VoipdLifecycle
import VoipdVocabulary

/// Runs ``LifecycleMatrix``: every input in every phase, for an app with a control
/// connection and for one without. The ``Driver`` checks the invariants on every batch.
@Suite("State × input matrix")
struct MatrixTests {
    @Test("input in phase", arguments: LifecycleMatrix.rows, LifecyclePhase.allCases)
    func cell(_ row: MatrixRow, _ phase: LifecyclePhase) throws {
        let cell = try #require(row.cells[phase])
        for (policy, expect) in [(AppPolicy.voipApp, cell.connected), (AppPolicy.silentApp, cell.unconnected)] {
            var driver = Driver.at(phase, policy: policy, keepAlive: LifecycleMatrix.keepAlive)
            let connection = policy.speaksProtocol ? "connected" : "unconnected"
            let actions = driver.feed(row.input, after: .seconds(1))
            #expect(actions.steps == expect.steps, "\(connection)")
            #expect(driver.phase == expect.phase ?? phase, "\(connection)")
            if let code = expect.recorded {
                #expect(driver.app.terminationReason?.code == code, "\(connection)")
            }
        }
    }

    @Test("every input and every timer has a row")
    func coverage() {
        let named = Set(LifecycleMatrix.rows.map { Self.caseName($0.input) })
        let all: Set<String> = [
            "launched", "takenBackSuspended", "launchFailed", "connected", "disconnected", "foregroundRequested", "backgroundRequested",
            "interruptionBegan", "interruptionEnded", "acknowledged", "stopConfirmed", "stopFailed", "resumeFailed", "socketReady", "processExited",
            "beginBackgroundTask", "endBackgroundTask", "setKeepAlive", "setAudioSessionActive", "timerFired", "terminateRequested",
            "killRequested", "memoryPressureKill", "reclaimRequested", "hibernateRequested", "screenLocked", "screenUnlocked",
            "heldSocketsChanged", "transferEventsReady", "quietMeasured", "policyChanged", "shutdown",
        ]
        #expect(named == all)
        let timers = Set(LifecycleMatrix.rows.compactMap { row -> LifecycleTimer? in
            if case .timerFired(let timer) = row.input { return timer } else { return nil }
        })
        #expect(timers == Set(LifecycleTimer.allCases))
        #expect(LifecycleMatrix.rows.allSatisfy { $0.cells.count == LifecyclePhase.allCases.count })
    }

    /// The case of an input; exhaustive, so a new input cannot be added without a row.
    static func caseName(_ input: LifecycleInput) -> String {
        switch input {
        case .launched: return "launched"
        case .takenBackSuspended: return "takenBackSuspended"
        case .launchFailed: return "launchFailed"
        case .connected: return "connected"
        case .disconnected: return "disconnected"
        case .foregroundRequested: return "foregroundRequested"
        case .backgroundRequested: return "backgroundRequested"
        case .interruptionBegan: return "interruptionBegan"
        case .interruptionEnded: return "interruptionEnded"
        case .acknowledged: return "acknowledged"
        case .stopConfirmed: return "stopConfirmed"
        case .stopFailed: return "stopFailed"
        case .resumeFailed: return "resumeFailed"
        case .socketReady: return "socketReady"
        case .transferEventsReady: return "transferEventsReady"
        case .processExited: return "processExited"
        case .beginBackgroundTask: return "beginBackgroundTask"
        case .endBackgroundTask: return "endBackgroundTask"
        case .setKeepAlive: return "setKeepAlive"
        case .setAudioSessionActive: return "setAudioSessionActive"
        case .timerFired: return "timerFired"
        case .terminateRequested: return "terminateRequested"
        case .killRequested: return "killRequested"
        case .memoryPressureKill: return "memoryPressureKill"
        case .reclaimRequested: return "reclaimRequested"
        case .hibernateRequested: return "hibernateRequested"
        case .screenLocked: return "screenLocked"
        case .screenUnlocked: return "screenUnlocked"
        case .heldSocketsChanged: return "heldSocketsChanged"
        case .quietMeasured: return "quietMeasured"
        case .policyChanged: return "policyChanged"
        case .shutdown: return "shutdown"
        }
    }
}
