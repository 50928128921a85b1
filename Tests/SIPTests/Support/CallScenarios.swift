import SIP
import Testing

/// The end-to-end calls, run against Kamailio and against the embedded SIPRegistrar: a
/// callee registers over TCP with an unresolvable Contact, a caller on a second connection
/// calls it through the proxy listening on `port`.
enum CallScenarios {
    typealias Callee = UserAgentDriver<SIPCallee>
    typealias Caller = UserAgentDriver<SIPCaller>

    static func registeredCallee(port: UInt16, answerDelay: Duration = .milliseconds(30)) throws -> Callee {
        let configuration = SIPCallee.Configuration(user: "alice", domain: "127.0.0.1:\(port)", expires: 600, answerDelay: answerDelay)
        let callee = try Callee(SIPCallee(configuration: configuration), port: port)
        try callee.apply { $0.register() }
        try waitUntil([callee], "alice is registered") { callee.agent.registrationState == .registered(expires: 600) }
        return callee
    }

    static func caller(port: UInt16, user: String = "alice", holdTime: Duration? = nil) throws -> Caller {
        let target = SIPURI(user: user, host: "127.0.0.1", port: port)
        return try Caller(SIPCaller(configuration: .init(target: target, user: "bob", domain: "127.0.0.1:\(port)", holdTime: holdTime)), port: port)
    }

    /// Calls alice and waits until both sides are in the call; checks the INVITE came over
    /// the callee's REGISTER connection (its only one) and the caller saw 180 and 200.
    static func establishCall(port: UInt16) throws -> (Callee, Caller) {
        let callee = try registeredCallee(port: port)
        let caller = try caller(port: port)
        try caller.apply { $0.call() }
        try waitUntil([callee, caller], "the call is established") {
            if case .inCall = callee.agent.callState, caller.agent.state == .inCall { return true }
            return false
        }
        #expect(callee.received.contains { $0.method == .invite })
        #expect(callee.received.first { $0.method == .invite }?.requestURI?.user == "alice")
        let statuses = caller.events.compactMap { event -> Int? in
            if case .response(let status, _, .invite) = event { status } else { nil }
        }
        #expect(statuses.contains(180))
        #expect(statuses.last == 200)
        return (callee, caller)
    }

    static func calleeHangsUp(port: UInt16) throws {
        let (callee, caller) = try establishCall(port: port)
        try callee.apply { $0.hangUp() }
        try waitUntil([callee, caller], "the BYE from the callee is answered") {
            callee.agent.callState == .idle && caller.agent.outcome == .answered
        }
        #expect(caller.received.contains { $0.method == .bye })
        #expect(callee.received.contains { $0.statusCode == 200 && $0.cseq?.method == .bye })
    }

    static func callerHangsUp(port: UInt16) throws {
        let (callee, caller) = try establishCall(port: port)
        try caller.apply { $0.hangUp() }
        try waitUntil([callee, caller], "the BYE from the caller is answered") {
            callee.agent.callState == .idle && caller.agent.outcome == .answered
        }
        #expect(callee.received.contains { $0.method == .bye })
        #expect(callee.events.contains { if case .callEnded(_, "remote hung up") = $0 { true } else { false } })
    }

    static func callerHangsUpAfterHoldTime(port: UInt16) throws {
        let callee = try registeredCallee(port: port)
        let caller = try caller(port: port, holdTime: .milliseconds(50))
        try caller.apply { $0.call() }
        try waitUntil([callee, caller], "the call is held and hung up") {
            caller.agent.outcome != nil && callee.agent.callState == .idle
        }
        #expect(caller.agent.outcome == .answered)
        #expect(callee.events.contains { if case .callEstablished = $0 { true } else { false } })
    }

    static func callerCancels(port: UInt16) throws {
        let callee = try registeredCallee(port: port, answerDelay: .seconds(60))
        let caller = try caller(port: port)
        try caller.apply { $0.call() }
        try waitUntil([callee, caller], "the callee rings") { caller.agent.state == .proceeding(statusCode: 180) }
        try caller.apply { $0.cancel() }
        // The proxy's 200 for the CANCEL and the callee's 487 may arrive in either order.
        try waitUntil([callee, caller], "the call is cancelled and the CANCEL answered") {
            caller.agent.outcome != nil && callee.agent.callState == .idle
                && caller.events.contains { if case .response(200, _, .cancel) = $0 { true } else { false } }
        }
        #expect(caller.agent.outcome == .notAnswered(statusCode: 487))
        #expect(callee.received.contains { $0.method == .cancel })
        #expect(callee.events.contains { if case .callEnded(_, "cancelled") = $0 { true } else { false } })
        // The callee's 487 is acknowledged (by the proxy or the caller): the ACK reaches it.
        try waitUntil([callee, caller], "the 487 is acknowledged") { callee.received.contains { $0.method == .ack } }
    }

    static func unknownUserIsNotFound(port: UInt16) throws {
        try callIsNotFound(port: port, user: "nobody")
    }

    static func callIsNotFound(port: UInt16, user: String) throws {
        let caller = try caller(port: port, user: user)
        try caller.apply { $0.call() }
        try waitUntil([caller], "the call fails") { caller.agent.outcome != nil }
        #expect(caller.agent.outcome == .notAnswered(statusCode: 404))
    }

    static func unregisteredUserIsNotFound(port: UInt16) throws {
        let callee = try registeredCallee(port: port)
        try callee.apply { $0.unregister() }
        try waitUntil([callee], "alice is unregistered") { callee.agent.registrationState == .unregistered }
        let caller = try caller(port: port)
        try caller.apply { $0.call() }
        try waitUntil([callee, caller], "the call fails") { caller.agent.outcome != nil }
        #expect(caller.agent.outcome == .notAnswered(statusCode: 404))
        #expect(!callee.received.contains { $0.method == .invite })
    }

    /// The callee's connection closes; once the proxy has noticed (`awaitClose` gets the
    /// callee's local port), a call is refused at once with 404.
    static func closedConnectionIsNotReached(port: UInt16, awaitClose: (UInt16) throws -> Void) throws {
        let callee = try registeredCallee(port: port)
        let calleePort = try callee.connection.localPort()
        callee.connection.close()
        try awaitClose(calleePort)
        try callIsNotFound(port: port, user: "alice")
    }
}
