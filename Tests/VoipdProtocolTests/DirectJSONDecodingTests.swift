import Foundation
import Testing
@testable import VoipdProtocol
import VoipdTransfers
import VoipdVocabulary

/// The request path's bodies are read without JSONDecoder when they are in the plain form;
/// whatever the direct reader accepts must decode to exactly what JSONDecoder makes of it,
/// and whatever it leaves must be JSONDecoder's to accept or refuse.
@Suite("Direct JSON decoding")
struct DirectJSONDecodingTests {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// Reads `body` both ways. Returns whether the direct reader took it; records an issue
    /// when it took something JSONDecoder refuses or reads differently.
    @discardableResult
    static func agree<T: DirectJSONDecodable & Encodable>(_ type: T.Type, _ body: String,
                                                          sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let bytes = Array(body.utf8)[...]
        let direct = DirectJSONReader.decode(T.self, from: bytes)
        let foundation = try? JSONDecoder().decode(T.self, from: Data(bytes))
        guard let direct else { return false }
        guard let foundation else {
            Issue.record("the direct reader took \(body) as \(T.self), JSONDecoder refuses it", sourceLocation: sourceLocation)
            return true
        }
        #expect((try? encoder.encode(direct)) == (try? encoder.encode(foundation)), "\(body)", sourceLocation: sourceLocation)
        return true
    }

    @Test("the plain form is read directly, and the same as JSONDecoder reads it")
    func plainForm() throws {
        #expect(Self.agree(SocketNameRequest.self, #"{"id":42,"name":"sip-tcp"}"#))
        #expect(Self.agree(SocketNameRequest.self, #" { "name" : "ünï 📞", "id" : 18446744073709551615 } "#))
        #expect(Self.agree(AcknowledgeMessage.self, #"{"event":7}"#))
        #expect(Self.agree(RequestID.self, #"{"id":3,"name":"x","arguments":["a",{"b":[1,2.5e3,null,true]}],"o":{}}"#))
        #expect(Self.agree(RequestID.self, #"{"id":null}"#))
        #expect(Self.agree(RequestID.self, #"{}"#))
        #expect(Self.agree(EmptyResult.self, #"{"anything":[1,"two"]}"#))
        #expect(Self.agree(Reply<EmptyResult>.self, #"{"id":1,"ok":false,"error":{"code":"noSuchSocket","message":"none"}}"#))
        #expect(Self.agree(Reply<EmptyResult>.self, #"{"id":1,"ok":false,"error":{"code":"fromTheFuture","message":"m"}}"#))
        #expect(Self.agree(Reply<SocketResult>.self, #"{"id":9,"ok":true,"more":null,"result":null}"#))
        for kind in AppEventKind.allCases {
            let event = EventMessage(event: 5, kind: kind, socket: "sip", bytesAvailable: -1, peerClosed: true, state: .background, reason: "r")
            #expect(Self.agree(EventMessage.self, String(decoding: try Self.encoder.encode(event), as: UTF8.self)))
            let listening = EventMessage(event: 6, kind: kind, socket: "sip", connectionsWaiting: 2, state: .background, reason: "r")
            #expect(Self.agree(EventMessage.self, String(decoding: try Self.encoder.encode(listening), as: UTF8.self)))
        }
        for time in [1795331360.6424584, 0.5, 1e9, 1795331360, 3.0e-7, -2.5E+3] {
            let socket = HeldSocketStatus(app: "a", name: "n", kind: "tcp", role: time > 1 ? "connected" : nil, bytesAvailable: 12,
                                          connectionsWaiting: time > 1 ? nil : 4, peerClosed: false, watching: true, registeredAt: time)
            for more in [false, true] {
                let body = String(decoding: try Self.encoder.encode(Reply(id: 4, result: SocketResult(socket: socket), more: more)), as: UTF8.self)
                #expect(Self.agree(Reply<SocketResult>.self, body))
            }
        }
    }

    @Test("a number read without strtod is exactly the double strtod reads, sign of zero included")
    func exactNumbers() throws {
        var texts = ["0", "-0", "0.0", "-0.0", "1", "-1", "0.1", "0.5", "1e22", "1e23", "1e-22", "1e-23", "9007199254740992",
                     "9007199254740993", "9007199254740992.5", "123456789012345678", "1234567890123456789", "12345678901234567890",
                     "1.7976931348623157e308", "5e-324", "2.2250738585072014E-308", "0.000000000000000000001", "1795331360.6424584",
                     "1795331360.642458", "179533136064.24584e-2", "1E+2", "1e0", "10000000000000000000000e-22", "4.35", "0.3e1"]
        // A fixed sequence (no randomness in a test): wall-clock times with nanoseconds as
        // wallClockSeconds makes them, and arbitrary doubles, as Swift writes them.
        var state: UInt64 = 0x9e37_79b9_7f4a_7c15
        func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state
        }
        for _ in 0..<3000 {
            texts.append((Double(1_700_000_000 + next() % 200_000_000) + Double(next() % 1_000_000_000) / 1e9).description)
            let bits = Double(bitPattern: next())
            if bits.isFinite { texts.append(bits.description) }
            texts.append("\(next() % 100_000).\(next() % 1_000_000)")
        }
        var exact = 0
        for text in texts {
            let expected = try #require(Double(text), "\(text)")
            let read = Array(text.utf8).withUnsafeBufferPointer { DirectJSONReader.exactDouble($0) }
            if let read {
                exact += 1
                #expect(read.bitPattern == expected.bitPattern, "\(text): \(read) instead of \(expected)")
            }
            let body = #"{"time":"# + text + #","app":"a","from":"active","to":"background","reason":"r"}"#
            #expect(Self.agree(TransitionRecord.self, body) == expected.isFinite, "\(body)")
        }
        #expect(exact > texts.count / 3, "the fast path reads most of them")
    }

    @Test("anything else is left to JSONDecoder")
    func leftToFoundation() {
        let left: [String] = [
            #"{"id":1,"name":"a\"b"}"#, #"{"id":1,"name":"\u0041"}"#, #"{"id":01,"name":"a"}"#, #"{"id":1.0,"name":"a"}"#,
            #"{"id":1e2,"name":"a"}"#, #"{"id":-1,"name":"a"}"#, #"{"id":18446744073709551616,"name":"a"}"#,
            #"{"id":1,"name":"a","id":2}"#, #"{"id":1}"#, #"{"id":1,"name":null}"#, #"{"id":1,"name":"a"} x"#,
            #"{"id":1,"name":"a",}"#, #"{"id":1 "name":"a"}"#, #"["id",1]"#, #""#, #"{"id":1,"name":"a""#,
            #"{"id":"1","name":"a"}"#, #"{"id":1,"name":"a","x":tru}"#, #"{"id":1,"name":"a","x":[1,]}"#,
            #"{"id":1,"name":"a","x":-}"#, #"{"id":1,"name":"a","x":1.}"#, #"{"id":1,"name":"a","x":"\#u{1}"}"#,
            #"{"id":1,"name":"a","x":"# + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "}",
        ]
        for body in left {
            #expect(!Self.agree(SocketNameRequest.self, body), "\(body)")
        }
        // Invalid UTF-8 in a string.
        #expect(DirectJSONReader.decode(SocketNameRequest.self, from: Array(#"{"id":1,"name":""#.utf8)[...] + [0xff, 0x22, 0x7d]) == nil)
        #expect(!Self.agree(EventMessage.self, #"{"event":1,"kind":"newKind","state":"background","reason":"r"}"#))
        // Background transfers' events are JSONDecoder's: skipped as an unknown key, a
        // completion that fits the direct reader's subset (a timeout, a file error) was lost.
        for error in [TransferError.timedOut, .file("cannot read /x"), .cancelled] {
            let payload = TransferEventsPayload(delivery: 3, events: [TransferEventMessage(task: 1, session: "s", completion: TransferCompletion(error: error))])
            let event = EventMessage(event: 2, kind: .backgroundTransferEvents, transfers: payload, state: .active, reason: "r")
            let body = String(decoding: (try? Self.encoder.encode(event)) ?? Data(), as: UTF8.self)
            #expect(!Self.agree(EventMessage.self, body), "\(body)")
            #expect((try? WireCodec().decode(EventMessage.self, from: Array(body.utf8)[...]))?.transfers == payload)
        }
        #expect(!Self.agree(Reply<EmptyResult>.self, #"{"id":1}"#))
    }

    @Test("WireCodec decodes the plain form and everything JSONDecoder accepts, and refuses the rest")
    func codec() throws {
        let codec = WireCodec()
        #expect(try codec.decode(SocketNameRequest.self, from: Array(#"{"id":2,"name":"x"}"#.utf8)[...]).name == "x")
        #expect(try codec.decode(SocketNameRequest.self, from: Array(#"{"id":2,"name":"\u0078"}"#.utf8)[...]).name == "x")
        #expect(throws: ProtocolError.self) { try codec.decode(SocketNameRequest.self, from: Array(#"{"id":2}"#.utf8)[...]) }
    }
}

/// The request path's replies and requests written directly are what JSONEncoder writes.
@Suite("Direct JSON encoding of the request path")
struct DirectJSONRequestPathTests {
    @Test("requests, replies, errors and listings, with awkward strings")
    func bodies() throws {
        for text in DirectJSONTests.awkward {
            let socket = HeldSocketStatus(app: text, name: text, kind: "unix-stream", bytesAvailable: Int.min, peerClosed: true,
                                          watching: false, registeredAt: 1795331360.6424584)
            let listener = HeldSocketStatus(app: text, name: text, kind: "tcp", role: "listening", bytesAvailable: 0, connectionsWaiting: 3,
                                            peerClosed: false, watching: true, registeredAt: 2)
            let bodies: [any DirectJSONEncodable] = [
                SocketNameRequest(id: UInt64.max, name: text), AcknowledgeMessage(event: 0), BackgroundTaskResult(task: 3),
                ProtocolError(.noSuchSocket, text), EmptyResult(),
                Reply(id: 1, result: SocketResult(socket: socket)), Reply(id: 2, result: SocketResult(socket: socket), more: true),
                Reply<EmptyResult>(id: 0, error: ProtocolError(.badRequest, text)), Reply(id: 3, result: EmptyResult()),
                Reply(id: 4, result: SocketsResult(sockets: [socket, listener])), Reply(id: 7, result: SocketResult(socket: listener)), Reply(id: 5, result: SocketsResult(sockets: [])),
                Reply(id: 6, result: EventsResult(transitions: [TransitionRecord(time: 1e9, app: text, from: .active, to: .background, reason: text)])),
            ]
            for body in bodies {
                #expect(DirectJSONTests.direct(body) == (try DirectJSONTests.foundation(body)))
            }
        }
    }

    @Test("the size of a listing's item is its direct encoding's")
    func sizes() throws {
        let socket = HeldSocketStatus(app: "a", name: "b", kind: "tcp", bytesAvailable: 1, peerClosed: false, watching: true, registeredAt: 2.5)
        #expect(WireCodec().encodedSize(socket) == (try DirectJSONTests.foundation(socket)).utf8.count)
    }
}
