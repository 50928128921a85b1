import SIP
import Testing

/// The embedded registrar over real sockets on 127.0.0.1.
@Suite struct SIPRegistrarTests {
    @Test func answersRegisterOnAnEphemeralPort() throws {
        try withRegistrar { registrar, _ in
            #expect(registrar.port != 0)
            let connection = try TestConnection(port: registrar.port)
            try connection.sendBytes(Fixtures.bytes(Fixtures.registerLines()))
            let ok = try connection.receive()
            #expect(ok.statusCode == 200)
            #expect(ok.contact?.uri.host == "alice.invalid")
            #expect(ok.contact?.parameters["expires"] == "600")
        }
    }

    @Test func answersAKeepAlivePingWithAPong() throws {
        try withRegistrar { registrar, _ in
            let connection = try TestConnection(port: registrar.port)
            try connection.sendBytes(Array("\r\n\r\n".utf8))
            #expect(try connection.receiveItem() == .keepAlivePong)
        }
    }

    @Test func reportsTrafficToItsObserverInOrder() throws {
        try withRegistrar { registrar, recorder in
            let connection = try TestConnection(port: registrar.port)
            try connection.sendBytes(Fixtures.bytes(Fixtures.registerLines()))
            _ = try connection.receive()
            try recorder.waitFor("the 200 OK") { $0.message?.statusCode == 200 }
            let events = recorder.recorded
            let kinds = events.map { event -> String in
                switch event.kind {
                case .connectionOpened: "opened"
                case .received(let message): "received \(message.method?.rawValue ?? "?")"
                case .sent(let message): "sent \(message.statusCode ?? 0)"
                case .connectionClosed, .note: "other"
                }
            }
            #expect(kinds == ["opened", "received REGISTER", "sent 200"])
            #expect(zip(events, events.dropFirst()).allSatisfy { $0.time <= $1.time })
            #expect(events.allSatisfy { $0.connection == events[0].connection && $0.peer.hasPrefix("127.0.0.1:") })
        }
    }

    @Test func closesAConnectionThatSendsGarbage() throws {
        try withRegistrar { registrar, recorder in
            let connection = try TestConnection(port: registrar.port)
            try connection.sendBytes(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            try connection.waitForClose()
            let closed = try recorder.waitFor("the close") { $0.isConnectionClosed }
            guard case .connectionClosed(let reason) = closed.kind else { return }
            #expect(reason.contains("framing error"))
        }
    }

    @Test func stopClosesEveryConnectionAndTheListener() throws {
        let registrar = try SIPRegistrar()
        try registrar.start()
        let connection = try TestConnection(port: registrar.port)
        try connection.sendBytes(Fixtures.bytes(Fixtures.registerLines()))
        _ = try connection.receive()
        registrar.stop()
        try connection.waitForClose()
        registrar.stop()
        #expect(throws: SIPSocketError.self) { try TestConnection(port: registrar.port) }
    }
}
