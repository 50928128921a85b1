import Foundation
import Testing
import VoipdLifecycle
import VoipdVocabulary

/// An in-place upgrade carries each app's state machine over through JSON: what comes back
/// must behave exactly like what went.
@Suite("Lifecycle survives encoding")
struct CodableTests {
    @Test("a suspended app with a task budget, a keep-alive and an event queued behaves the same after a round trip")
    func roundTrip() throws {
        var original = Driver.at(.suspended).app
        _ = original.handle(.setKeepAlive(.seconds(900)), now: .at(100))
        _ = original.handle(.screenLocked, now: .at(101))
        let data = try JSONEncoder().encode(original)
        var copy = try JSONDecoder().decode(AppLifecycle.self, from: data)
        #expect(copy.state == original.state)
        #expect(copy.keepAliveInterval == original.keepAliveInterval)
        #expect(copy.locked == original.locked)
        let readiness = SocketReadiness(name: "sip", bytesAvailable: 10, peerClosed: false)
        #expect(copy.handle(.socketReady(readiness), now: .at(102)) == original.handle(.socketReady(readiness), now: .at(102)))
        #expect(copy.handle(.acknowledged(eventID: 99), now: .at(103)) == original.handle(.acknowledged(eventID: 99), now: .at(103)))
        #expect(copy.inFlight == original.inFlight)
    }

    @Test("in every phase, what comes back answers every input of the matrix as what went", arguments: LifecyclePhase.allCases)
    func everyPhase(_ phase: LifecyclePhase) throws {
        for policy in [AppPolicy.voipApp, .silentApp] {
            let original = Driver.at(phase, policy: policy, keepAlive: LifecycleMatrix.keepAlive).app
            let copy = try JSONDecoder().decode(AppLifecycle.self, from: JSONEncoder().encode(original))
            for row in LifecycleMatrix.rows {
                var went = original, came = copy
                #expect(came.handle(row.input, now: .at(2000)) == went.handle(row.input, now: .at(2000)), "\(row.input)")
                #expect(came.phase == went.phase && came.outbox == went.outbox && came.inFlight == went.inFlight, "\(row.input)")
            }
        }
    }
}
