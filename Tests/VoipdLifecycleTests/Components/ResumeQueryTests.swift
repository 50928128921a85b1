import Testing
import VoipdLifecycle
import VoipdVocabulary

/// The daemon sends SIGCONT before feeding a wake when the lifecycle says it will resume:
/// the query must agree with what the input then does, in every phase.
@Suite("resumesOnSocketReady")
struct ResumeQueryTests {
    @Test("the query answers what .socketReady does", arguments: LifecyclePhase.allCases)
    func agreesWithTheInput(phase: LifecyclePhase) {
        for terminating in [false, true] {
            var driver = Driver.at(phase)
            if terminating && phase.isAlive { driver.feed(.terminateRequested) }
            let predicted = driver.app.resumesOnSocketReady
            let steps = driver.feed(.socketReady(SocketReadiness(name: "sip", bytesAvailable: 4, peerClosed: false))).steps
            #expect(predicted == steps.contains(.resume), "\(phase), terminating: \(terminating)")
        }
    }
}
