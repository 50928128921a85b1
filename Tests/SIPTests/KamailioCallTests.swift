import SIP
import Testing

/// The end-to-end calls through a real Kamailio with Deploy/kamailio/kamailio.cfg.
/// Skipped when Kamailio is not installed, unless CI=true, where that is a failure.
@Suite(.enabled(if: KamailioProcess.shouldRun, "\(KamailioProcess.binary) is not installed (set CI=true to make this a failure)"))
struct KamailioCallTests {
    private func withKamailio(_ body: (UInt16) throws -> Void) throws {
        let kamailio = try KamailioProcess()
        defer { kamailio.stop() }
        do {
            try body(kamailio.port)
        } catch {
            throw TestFailure("\(error)\n--- kamailio log ---\n\(kamailio.log.contents)")
        }
    }

    @Test func calleeHangsUp() throws { try withKamailio(CallScenarios.calleeHangsUp) }
    @Test func callerHangsUp() throws { try withKamailio(CallScenarios.callerHangsUp) }
    @Test func callerHangsUpAfterHoldTime() throws { try withKamailio(CallScenarios.callerHangsUpAfterHoldTime) }
    @Test func callerCancels() throws { try withKamailio(CallScenarios.callerCancels) }
    @Test func unknownUserIsNotFound() throws { try withKamailio(CallScenarios.unknownUserIsNotFound) }
    @Test func unregisteredUserIsNotFound() throws { try withKamailio(CallScenarios.unregisteredUserIsNotFound) }

    @Test func closedConnectionIsNotReached() throws {
        let kamailio = try KamailioProcess()
        defer { kamailio.stop() }
        try CallScenarios.closedConnectionIsNotReached(port: kamailio.port) { calleePort in
            let line = "voipd: tcp connection from 127.0.0.1:\(calleePort) closed"
            guard kamailio.log.waitFor(line, until: .now + .seconds(5)) else {
                throw TestFailure("kamailio did not log \"\(line)\":\n\(kamailio.log.contents)")
            }
        }
    }
}
