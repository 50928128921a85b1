import SIP
import Testing

/// The end-to-end calls through the embedded SIPRegistrar.
@Suite struct EmbeddedRegistrarCallTests {
    private func withRegistrar(_ body: (UInt16) throws -> Void) throws {
        let registrar = try SIPRegistrar()
        try registrar.start()
        defer { registrar.stop() }
        try body(registrar.port)
    }

    @Test func calleeHangsUp() throws { try withRegistrar(CallScenarios.calleeHangsUp) }
    @Test func callerHangsUp() throws { try withRegistrar(CallScenarios.callerHangsUp) }
    @Test func callerHangsUpAfterHoldTime() throws { try withRegistrar(CallScenarios.callerHangsUpAfterHoldTime) }
    @Test func callerCancels() throws { try withRegistrar(CallScenarios.callerCancels) }
    @Test func unknownUserIsNotFound() throws { try withRegistrar(CallScenarios.unknownUserIsNotFound) }
    @Test func unregisteredUserIsNotFound() throws { try withRegistrar(CallScenarios.unregisteredUserIsNotFound) }

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
