import SIP
import Testing
import VoipdTestSupport
import VoipdVocabulary

/// The end-to-end calls through a real Kamailio with Deploy/kamailio/kamailio.cfg.
/// Skipped when Kamailio is not installed, unless CI=true, where that is a failure.
@Suite(.enabled(if: KamailioServer.shouldRun, Comment(rawValue: KamailioServer.skipReason)))
struct KamailioCallTests {
    @Test(arguments: CallScenario.allCases, TransportPair.all)
    func call(_ scenario: CallScenario, _ transports: TransportPair) throws {
        let kamailio = try KamailioServer(options: transports.callee == .udp || transports.caller == .udp ? ["--udp"] : [])
        defer { kamailio.stop() }
        do {
            try scenario.run(CallSetup(port: kamailio.port, transports))
        } catch {
            throw TestFailure("\(error)\n--- kamailio log ---\n\(kamailio.log)")
        }
    }

    @Test func closedConnectionIsNotReached() throws {
        let kamailio = try KamailioServer()
        defer { kamailio.stop() }
        try CallScenarios.closedConnectionIsNotReached(port: kamailio.port) { calleePort in
            let line = "voipd: tcp connection from 127.0.0.1:\(calleePort) closed"
            guard try kamailio.waitForLog(line, until: MonotonicInstant.now + .seconds(5)) else {
                throw TestFailure("kamailio did not log \"\(line)\":\n\(kamailio.log)")
            }
        }
    }
}
