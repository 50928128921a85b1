import Glibc
import Testing
import VoipClient
import VoipdSystem

/// Bad input gets a clear error, and nothing is lost: the daemon keeps serving, leaks no
/// descriptor, and closes every descriptor that came with a refused message.
@Suite("Bad input", .serialized)
struct BadInputTests {
    /// Runs `body` against a fresh daemon, then checks that a new client is served and that
    /// the daemon's descriptors are back to their count before.
    static func withDaemon(_ body: (DaemonHarness) throws -> Void) throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let baseline = openDescriptorCount(harness.daemon.pid)
        try body(harness)
        let apps = try VoipdControl(socketPath: harness.socketPath).status()
        #expect(apps.allSatisfy { !$0.name.isEmpty }, "a new client is served")
        // A raw client that said hello made this test process an app: voipd tracks it by a
        // pidfd for as long as it lives. Everything else must be gone.
        let tracked = apps.filter { $0.pid == getpid() }.count
        // Each round trip lets the daemon process the disconnections queued before it.
        var count = -1
        for _ in 0..<50 {
            _ = try harness.control.status()
            count = openDescriptorCount(harness.daemon.pid) - tracked
            if count == baseline { break }
        }
        #expect(count == baseline, "voipd holds \(count) descriptors beyond \(tracked) pidfds, \(baseline) before")
    }

    static func expectRefusal(_ client: RawClient, _ code: String, closes: Bool, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let answer = try client.reply()
        #expect(!answer.ok, sourceLocation: sourceLocation)
        #expect(answer.code == code, "\(answer.message ?? "")", sourceLocation: sourceLocation)
        #expect(answer.message?.isEmpty == false, "the error says why", sourceLocation: sourceLocation)
        if closes { #expect(client.isClosedByDaemon(), "the connection is closed after \(code)", sourceLocation: sourceLocation) }
    }

    /// A new connection that sends `frame` is refused with `code` and closed.
    static func expectRefusalOfNewClient(_ harness: DaemonHarness, sending frame: [UInt8], _ code: String,
                                         sourceLocation: SourceLocation = #_sourceLocation) throws {
        let client = try RawClient(socketPath: harness.socketPath)
        try client.send(frame)
        try expectRefusal(client, code, closes: true, sourceLocation: sourceLocation)
    }

    /// A client identified as an app (the test process itself: never backgrounded here).
    static func identified(_ harness: DaemonHarness, as name: String) throws -> RawClient {
        let client = try RawClient(socketPath: harness.socketPath)
        try client.request(type: 1, #"{"id":1,"name":"\#(name)"}"#)
        #expect(try client.reply().ok)
        return client
    }

    @Test("a frame shorter than its header, or than the body its header declares")
    func truncatedFrames() throws {
        try Self.withDaemon { harness in
            try Self.expectRefusalOfNewClient(harness, sending: [1, 0, 0], "truncatedFrame")
            try Self.expectRefusalOfNewClient(harness, sending: RawClient.frame(type: 17, body: #"{"id":5}"#, declaredLength: 100), "truncatedFrame")
        }
    }

    @Test("an unknown message type, a reply type sent to the daemon, another protocol version")
    func unknownTypes() throws {
        try Self.withDaemon { harness in
            try Self.expectRefusalOfNewClient(harness, sending: RawClient.frame(type: 999, body: #"{"id":7}"#), "unknownType")
            try Self.expectRefusalOfNewClient(harness, sending: RawClient.frame(type: 128, body: #"{"id":8}"#), "unknownType")
            try Self.expectRefusalOfNewClient(harness, sending: RawClient.frame(type: 17, body: #"{"id":9}"#, version: 9), "unsupportedVersion")
        }
    }

    @Test("an oversized frame")
    func oversized() throws {
        try Self.withDaemon { harness in
            let body = #"{"id":1,"pad":""# + String(repeating: "x", count: 70_000) + #""}"#
            try Self.expectRefusalOfNewClient(harness, sending: RawClient.frame(type: 17, body: body), "frameTooLarge")
        }
    }

    @Test("malformed JSON and a missing field")
    func badBodies() throws {
        try Self.withDaemon { harness in
            let garbage = try RawClient(socketPath: harness.socketPath)
            try garbage.request(type: 17, "{not json")
            try Self.expectRefusal(garbage, "badRequest", closes: false)
            try garbage.request(type: 17, #"{"id":2}"#)
            #expect(try garbage.reply().ok, "a bad body is refused, the connection stays")
            let missing = try RawClient(socketPath: harness.socketPath)
            try missing.request(type: 19, #"{"id":3,"verb":"background"}"#)
            let answer = try missing.reply()
            #expect(answer.code == "badRequest")
            #expect(answer.id == 3, "the error names the request")
            #expect(answer.message?.contains("name") == true)
        }
    }

    /// Found by Tests/Fuzz: a refusal's message quotes the value the decoder refused, and the
    /// log line carried the client's newline and escape sequences as they were.
    @Test("what a client sends cannot forge a line of voipd's log")
    func logInjection() throws {
        try Self.withDaemon { harness in
            let client = try RawClient(socketPath: harness.socketPath)
            try client.request(type: 19, #"{"id":1,"verb":"x\n<0>forged by a client\u001b[2J","name":"nobody"}"#)
            try Self.expectRefusal(client, "badRequest", closes: false)
            let lines = harness.log.split(separator: "\n")
            #expect(!lines.contains { $0.hasPrefix("<0>forged") }, "a client's newline started a line of the log")
            #expect(lines.contains { $0.contains(#"x\n<0>forged by a client\x1b[2J"#) }, "the refusal is logged, escaped")
            #expect(lines.allSatisfy { $0.first == "<" && !$0.utf8.contains(0x1b) })
        }
    }

    @Test("more descriptors than the message carries: every one is closed")
    func tooManyDescriptors() throws {
        try Self.withDaemon { harness in
            let client = try Self.identified(harness, as: "greedy")
            let witnesses = try (0..<3).map { _ in try ClosureWitness() }
            try client.request(type: 2, #"{"id":2,"name":"sip"}"#, descriptors: witnesses.map(\.descriptor))
            witnesses.forEach { $0.dropOwnCopy() }
            try Self.expectRefusal(client, "tooManyDescriptors", closes: true)
            for witness in witnesses { #expect(witness.givenEndWasClosed(), "voipd closed the descriptor it refused") }
            #expect(try harness.control.sockets("greedy").isEmpty)
        }
    }

    @Test("descriptors beyond the room made for them arrive cut (MSG_CTRUNC): all are closed")
    func controlTruncated() throws {
        try Self.withDaemon { harness in
            let client = try RawClient(socketPath: harness.socketPath)
            let witnesses = try (0..<12).map { _ in try ClosureWitness() }
            try client.request(type: 17, #"{"id":4}"#, descriptors: witnesses.map(\.descriptor))
            witnesses.forEach { $0.dropOwnCopy() }
            try Self.expectRefusal(client, "tooManyDescriptors", closes: true)
            for witness in witnesses { #expect(witness.givenEndWasClosed()) }
        }
    }

    /// What PROTOCOL.md says of more than 253 descriptors: the kernel refuses the sender's
    /// sendmsg itself (SCM_MAX_FD), so nothing reaches voipd, no reply comes, and the
    /// connection goes on.
    @Test("more than 253 descriptors: the kernel refuses the client's sendmsg; the connection goes on")
    func beyondTheKernelsLimit() throws {
        try Self.withDaemon { harness in
            let client = try RawClient(socketPath: harness.socketPath)
            let descriptor = try openFile("/dev/null", flags: O_RDONLY)
            let many = [CInt](repeating: descriptor.rawValue, count: 254)
            #expect(throws: Errno(EINVAL)) { try client.request(type: 17, #"{"id":4}"#, descriptors: many) }
            try client.request(type: 17, #"{"id":5}"#)
            let answer = try client.reply()
            #expect(answer.ok && answer.id == 5, "the next request is answered, and nothing else: \(answer.json)")
        }
    }

    @Test("a header that declares descriptors that do not come, or the reverse")
    func descriptorMismatch() throws {
        try Self.withDaemon { harness in
            let client = try Self.identified(harness, as: "liar")
            try client.send(RawClient.frame(type: 2, body: #"{"id":2,"name":"sip"}"#, declaredDescriptors: 1))
            try Self.expectRefusal(client, "descriptorMismatch", closes: true)
            let other = try RawClient(socketPath: harness.socketPath)
            let witness = try ClosureWitness()
            try other.send(RawClient.frame(type: 17, body: #"{"id":3}"#, declaredDescriptors: 0), descriptors: [witness.descriptor])
            witness.dropOwnCopy()
            try Self.expectRefusal(other, "descriptorMismatch", closes: true)
            #expect(witness.givenEndWasClosed())
        }
    }

    @Test("what nothing can arrive on, or voipd cannot watch, cannot be a VoIP socket: a pipe, a Unix listener, a TCP socket neither listening nor connected, an unbound UDP socket, an unconnected Unix datagram socket")
    func notVoIPSockets() throws {
        try Self.withDaemon { harness in
            let client = try Self.identified(harness, as: "confused")
            let pipe = try makePipe()
            try client.request(type: 2, #"{"id":2,"name":"pipe"}"#, descriptors: [pipe.first.rawValue])
            try Self.expectRefusal(client, "notASocket", closes: false)
            let unixListener = try Socket.listenUnix(path: harness.directory + "/unix-listener", type: Socket.streamType)
            try client.request(type: 2, #"{"id":3,"name":"listener"}"#, descriptors: [unixListener.rawValue])
            try Self.expectRefusal(client, "listeningSocket", closes: false)
            let unconnected = try Socket.make(domain: AF_INET, type: Socket.streamType)
            try client.request(type: 2, #"{"id":4,"name":"loose"}"#, descriptors: [unconnected.rawValue])
            try Self.expectRefusal(client, "notConnected", closes: false)
            let unbound = try Socket.make(domain: AF_INET, type: Socket.datagramType)
            try client.request(type: 2, #"{"id":5,"name":"unbound"}"#, descriptors: [unbound.rawValue])
            try Self.expectRefusal(client, "notConnected", closes: false)
            let unixDatagram = try Socket.make(domain: AF_UNIX, type: Socket.datagramType)
            try client.request(type: 2, #"{"id":6,"name":"unix-dgram"}"#, descriptors: [unixDatagram.rawValue])
            try Self.expectRefusal(client, "notConnected", closes: false)
            #expect(try harness.control.sockets("confused").isEmpty)
        }
    }

    @Test("a TCP listener and a bound, unconnected UDP socket are VoIP sockets, shown with their role")
    func listenersAndUnconnectedDatagrams() throws {
        try Self.withDaemon { harness in
            let client = try Self.identified(harness, as: "server")
            let listener = try Socket.listenTCP()
            try client.request(type: 2, #"{"id":2,"name":"listener"}"#, descriptors: [listener.rawValue])
            #expect(try client.reply().ok)
            let datagrams = try Socket.bindUDP()
            try client.request(type: 2, #"{"id":3,"name":"datagrams"}"#, descriptors: [datagrams.rawValue])
            #expect(try client.reply().ok)
            let held = try harness.control.sockets("server")
            #expect(held.map(\.name) == ["datagrams", "listener"])
            #expect(held.map(\.kind) == ["udp", "tcp"] && held.map(\.role) == ["unconnected", "listening"], "\(held)")
            #expect(held.last?.connectionsWaiting == 0 && held.first?.connectionsWaiting == nil)
            for (id, name) in [(4, "listener"), (5, "datagrams")] {
                try client.request(type: 3, #"{"id":\#(id),"name":"\#(name)"}"#)
                #expect(try client.reply().ok)
            }
        }
    }

    @Test("a TCP socket's registration says what waits on it, from the mark's one look; what arrives later shows in a listing")
    func registeredTCPBytesAvailable() throws {
        try Self.withDaemon { harness in
            let client = try Self.identified(harness, as: "tcpbytes")
            let listener = try Socket.listenTCP()
            let port = try Socket.localPort(listener)
            let fullPeer = try Socket.connectTCP(host: "127.0.0.1", port: port)
            let emptyPeer = try Socket.connectTCP(host: "127.0.0.1", port: port)
            guard let full = try Socket.accept(listener, nonBlocking: false).processed(),
                  let empty = try Socket.accept(listener, nonBlocking: false).processed() else {
                Issue.record("accept would block")
                return
            }
            try fullPeer.writeAll([1, 2, 3])
            #expect(waitReadable(full.rawValue, Deadline(.seconds(10))), "the bytes reach the socket")
            func registered(_ id: Int, _ name: String, _ socket: borrowing FileDescriptor) throws -> Int? {
                try client.request(type: 2, #"{"id":\#(id),"name":"\#(name)"}"#, descriptors: [socket.rawValue])
                let answer = try client.reply()
                #expect(answer.ok, "\(answer.json)")
                return ((answer.json["result"] as? [String: Any])?["socket"] as? [String: Any])?["bytesAvailable"] as? Int
            }
            #expect(try registered(2, "full", full) == 3)
            #expect(try registered(3, "empty", empty) == 0)
            // Known empty at its registration, it is not asked again until the kernel reports an
            // arrival: the bytes are in its queue (the test's copy is readable) before the
            // listing, which voipd serves after the held sockets' readiness.
            try emptyPeer.writeAll([4, 5, 6, 7, 8])
            #expect(waitReadable(empty.rawValue, Deadline(.seconds(10))), "the bytes reach the socket")
            let listed = try harness.control.sockets("tcpbytes")
            #expect(listed.map(\.name) == ["empty", "full"] && listed.map(\.bytesAvailable) == [5, 3], "\(listed)")
            for (id, name) in [(4, "full"), (5, "empty")] {
                try client.request(type: 3, #"{"id":\#(id),"name":"\#(name)"}"#)
                #expect(try client.reply().ok)
            }
        }
    }

    @Test("a duplicate socket name, a bad name, a request before hello")
    func namesAndIdentity() throws {
        try Self.withDaemon { harness in
            let anonymous = try RawClient(socketPath: harness.socketPath)
            let first = try Socket.pair()
            try anonymous.request(type: 2, #"{"id":1,"name":"sip"}"#, descriptors: [first.first.rawValue])
            try Self.expectRefusal(anonymous, "notIdentified", closes: false)

            let client = try Self.identified(harness, as: "twice")
            try client.request(type: 2, #"{"id":2,"name":"sip"}"#, descriptors: [first.first.rawValue])
            #expect(try client.reply().ok)
            let second = try Socket.pair()
            try client.request(type: 2, #"{"id":3,"name":"sip"}"#, descriptors: [second.first.rawValue])
            try Self.expectRefusal(client, "duplicateName", closes: false)
            try client.request(type: 2, #"{"id":4,"name":"../etc"}"#, descriptors: [second.first.rawValue])
            try Self.expectRefusal(client, "invalidName", closes: false)
            #expect(try harness.control.sockets("twice").map(\.name) == ["sip"])
            // The held socket goes with the app's record: unregister it so the count balances.
            try client.request(type: 3, #"{"id":5,"name":"sip"}"#)
            #expect(try client.reply().ok)
        }
    }

    @Test("a peer that disconnects mid-request, or before saying anything")
    func disconnects() throws {
        try Self.withDaemon { harness in
            var witnesses: [ClosureWitness] = []
            for index in 0..<10 {
                _ = try RawClient(socketPath: harness.socketPath)
                let hasty = try RawClient(socketPath: harness.socketPath)
                let witness = try ClosureWitness()
                try hasty.request(type: 16, #"{"id":1,"arguments":["/bin/true"],"name":"hasty\#(index)","speaksProtocol":false}"#,
                                  descriptors: [witness.descriptor])
                witness.dropOwnCopy()
                witnesses.append(witness)
                // Gone before the reply arrives.
            }
            for index in 0..<10 {
                try harness.waitForState("hasty\(index)", .terminated)
                // The output descriptor it passed belongs to the app's launch record until
                // that is forgotten.
                try harness.control.command(.forget, "hasty\(index)")
            }
            for witness in witnesses { #expect(witness.givenEndWasClosed()) }
        }
    }
}
