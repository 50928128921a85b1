import SIP
import Testing

/// The end-to-end calls through the embedded SIPRegistrar, over TCP, over UDP, and a TCP
/// caller calling a UDP callee.
@Suite struct EmbeddedRegistrarCallTests {
    @Test(arguments: CallScenario.allCases, TransportPair.all)
    func call(_ scenario: CallScenario, _ transports: TransportPair) throws {
        let registrar = try SIPRegistrar()
        try registrar.start()
        defer { registrar.stop() }
        try scenario.run(CallSetup(port: registrar.port, transports))
    }

    @Test func closedConnectionIsNotReached() throws {
        let recorder = TrafficRecorder()
        let registrar = try SIPRegistrar(observer: recorder.observer)
        try registrar.start()
        defer { registrar.stop() }
        try CallScenarios.closedConnectionIsNotReached(port: registrar.port) { calleePort in
            try recorder.waitFor("the callee's connection to close") { $0.isConnectionClosed && $0.peer == "127.0.0.1:\(calleePort)" }
        }
    }
}
