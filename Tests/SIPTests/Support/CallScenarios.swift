import SIP
import Testing

/// How callee and caller reach the proxy: a test argument.
struct TransportPair: Sendable, CustomTestStringConvertible {
    var callee: SIPTransport
    var caller: SIPTransport

    var testDescription: String { "callee over \(callee), caller over \(caller)" }

    /// The combinations the suites run: TCP, UDP, and a TCP caller calling a UDP callee.
    static let all = [TransportPair(callee: .tcp, caller: .tcp), TransportPair(callee: .udp, caller: .udp), TransportPair(callee: .udp, caller: .tcp)]
}

/// The scenarios every proxy must pass, by name: a test argument.
enum CallScenario: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case calleeHangsUp, callerHangsUp, callerHangsUpAfterHoldTime, callerCancels, unknownUserIsNotFound, unregisteredUserIsNotFound

    var testDescription: String { rawValue }

    func run(_ setup: CallSetup) throws {
        switch self {
        case .calleeHangsUp: try CallScenarios.calleeHangsUp(setup)
        case .callerHangsUp: try CallScenarios.callerHangsUp(setup)
        case .callerHangsUpAfterHoldTime: try CallScenarios.callerHangsUpAfterHoldTime(setup)
        case .callerCancels: try CallScenarios.callerCancels(setup)
        case .unknownUserIsNotFound: try CallScenarios.unknownUserIsNotFound(setup)
        case .unregisteredUserIsNotFound: try CallScenarios.unregisteredUserIsNotFound(setup)
        }
    }
}

/// Where a scenario's proxy listens, and how callee and caller reach it.
struct CallSetup: Sendable {
    let port: UInt16
    var callee: SIPTransport = .tcp
    var caller: SIPTransport = .tcp

    init(port: UInt16, _ transports: TransportPair = TransportPair(callee: .tcp, caller: .tcp)) {
        self.port = port
        callee = transports.callee
        caller = transports.caller
    }
}

/// The end-to-end calls, run against Kamailio and against the embedded SIPRegistrar: a
/// callee registers with the proxy listening on `port` (over TCP with an unresolvable
/// Contact, reachable only over its connection; over UDP from its bound socket, reachable
/// at the REGISTER's source address), a caller on another connection or socket calls it
/// through the proxy.
enum CallScenarios {
    typealias Callee = UserAgentDriver<SIPCallee>
    typealias Caller = UserAgentDriver<SIPCaller>

    static func registeredCallee(_ setup: CallSetup, answerDelay: Duration = .milliseconds(30)) throws -> Callee {
        let callee = try Callee(transport: setup.callee, port: setup.port) { boundPort in
            SIPCallee(configuration: SIPCallee.Configuration(
                user: "alice", domain: "127.0.0.1:\(setup.port)", transport: setup.callee, contactHost: boundPort.map { _ in "127.0.0.1" },
                contactPort: boundPort, expires: 600, answerDelay: answerDelay))
        }
        try callee.apply { $0.register() }
        try waitUntil([callee], "alice is registered") { callee.agent.registrationState == .registered(expires: 600) }
        return callee
    }

    static func caller(_ setup: CallSetup, user: String = "alice", holdTime: Duration? = nil) throws -> Caller {
        let target = SIPURI(user: user, host: "127.0.0.1", port: setup.port)
        return try Caller(transport: setup.caller, port: setup.port) { boundPort in
            SIPCaller(configuration: .init(
                target: target, user: "bob", domain: "127.0.0.1:\(setup.port)", transport: setup.caller,
                contactHost: boundPort.map { _ in "127.0.0.1" }, contactPort: boundPort, holdTime: holdTime))
        }
    }

    /// Calls alice and waits until both sides are in the call; checks the INVITE came over
    /// the callee's REGISTER flow (its only one) and the caller saw 180 and 200.
    static func establishCall(_ setup: CallSetup) throws -> (Callee, Caller) {
        let callee = try registeredCallee(setup)
        let caller = try caller(setup)
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

    static func calleeHangsUp(_ setup: CallSetup) throws {
        let (callee, caller) = try establishCall(setup)
        try callee.apply { $0.hangUp() }
        try waitUntil([callee, caller], "the BYE from the callee is answered") {
            callee.agent.callState == .idle && caller.agent.outcome == .answered
        }
        #expect(caller.received.contains { $0.method == .bye })
        #expect(callee.received.contains { $0.statusCode == 200 && $0.cseq?.method == .bye })
    }

    static func callerHangsUp(_ setup: CallSetup) throws {
        let (callee, caller) = try establishCall(setup)
        try caller.apply { $0.hangUp() }
        try waitUntil([callee, caller], "the BYE from the caller is answered") {
            callee.agent.callState == .idle && caller.agent.outcome == .answered
        }
        #expect(callee.received.contains { $0.method == .bye })
        #expect(callee.events.contains { if case .callEnded(_, "remote hung up") = $0 { true } else { false } })
    }

    static func callerHangsUpAfterHoldTime(_ setup: CallSetup) throws {
        let callee = try registeredCallee(setup)
        let caller = try caller(setup, holdTime: .milliseconds(50))
        try caller.apply { $0.call() }
        try waitUntil([callee, caller], "the call is held and hung up") {
            caller.agent.outcome != nil && callee.agent.callState == .idle
        }
        #expect(caller.agent.outcome == .answered)
        #expect(callee.events.contains { if case .callEstablished = $0 { true } else { false } })
    }

    static func callerCancels(_ setup: CallSetup) throws {
        let callee = try registeredCallee(setup, answerDelay: .seconds(60))
        let caller = try caller(setup)
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

    static func unknownUserIsNotFound(_ setup: CallSetup) throws {
        try callIsNotFound(setup, user: "nobody")
    }

    static func callIsNotFound(_ setup: CallSetup, user: String) throws {
        let caller = try caller(setup, user: user)
        try caller.apply { $0.call() }
        try waitUntil([caller], "the call fails") { caller.agent.outcome != nil }
        #expect(caller.agent.outcome == .notAnswered(statusCode: 404))
    }

    static func unregisteredUserIsNotFound(_ setup: CallSetup) throws {
        let callee = try registeredCallee(setup)
        try callee.apply { $0.unregister() }
        try waitUntil([callee], "alice is unregistered") { callee.agent.registrationState == .unregistered }
        let caller = try caller(setup)
        try caller.apply { $0.call() }
        try waitUntil([callee, caller], "the call fails") { caller.agent.outcome != nil }
        #expect(caller.agent.outcome == .notAnswered(statusCode: 404))
        #expect(!callee.received.contains { $0.method == .invite })
    }

    /// The callee's connection closes; once the proxy has noticed (`awaitClose` gets the
    /// callee's local port), a call is refused at once with 404.
    static func closedConnectionIsNotReached(port: UInt16, awaitClose: (UInt16) throws -> Void) throws {
        let callee = try registeredCallee(CallSetup(port: port))
        let connection = try #require(callee.connection)
        let calleePort = try connection.localPort()
        connection.close()
        try awaitClose(calleePort)
        try callIsNotFound(CallSetup(port: port), user: "alice")
    }
}
