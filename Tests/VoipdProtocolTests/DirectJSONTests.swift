import Foundation
import Testing
import VoipdProtocol
import VoipdVocabulary

/// The frames sent on every wake are encoded directly; they must be byte for byte what
/// JSONEncoder (sorted keys, slashes unescaped) writes, so clients cannot tell.
@Suite("Direct JSON encoding")
struct DirectJSONTests {
    static func foundation(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func direct(_ value: some DirectJSONEncodable) -> String {
        var bytes: [UInt8] = []
        value.appendJSON(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    static let awkward = ["sip", "", "a \"quoted\" \\ back/slash", "tab\there\nnewline\r\u{1}\u{1f}", "ünïcødé 📞", "data on sip"]

    @Test("events, with and without a socket, with awkward strings")
    func events() throws {
        for text in Self.awkward {
            for kind in AppEventKind.allCases {
                let withSocket = EventMessage(event: 42, kind: kind, socket: text, bytesAvailable: 646, peerClosed: true,
                                              state: .background, reason: text)
                let without = EventMessage(event: UInt64.max, kind: kind, state: .inactive, reason: text)
                #expect(Self.direct(withSocket) == (try Self.foundation(withSocket)))
                #expect(Self.direct(without) == (try Self.foundation(without)))
                #expect(try JSONDecoder().decode(EventMessage.self, from: Data(Self.direct(withSocket).utf8)) == withSocket)
            }
        }
    }

    @Test("transitions, with fractional, whole and large times")
    func transitions() throws {
        for time in [1795331360.6424584, 0.5, 1e9, 1795331360, 3.0e-7] {
            for text in Self.awkward {
                let record = TransitionRecord(time: time, app: text, from: .suspended, to: .background, reason: text)
                #expect(Self.direct(record) == (try Self.foundation(record)), "\(time)")
                #expect(try JSONDecoder().decode(TransitionRecord.self, from: Data(Self.direct(record).utf8)) == record)
            }
        }
    }

    @Test("times to the microsecond (written from their digits) as JSONEncoder writes them, and read back exactly")
    func microsecondTimes() throws {
        // A fixed sequence (SplitMix64): seconds across the whole range written from digits,
        // fractions with every count of trailing zeros, and the edges on both sides of it.
        var state: UInt64 = 0x9e37_79b9_7f4a_7c15
        func next() -> UInt64 {
            state &+= 0x9e37_79b9_7f4a_7c15
            var z = state
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            return z ^ (z >> 31)
        }
        var times: [Double] = [1, 1.000001, 1.5, 9.999999, 10, 1e9, 1795331360, 1795331360.000001, 1795331360.1, 4294967295.999999,
                               4294967296, 4294967296.5, 0.999999, 0.5, 1795331360.6424584, 1795331360.0000005]
        for index in 0..<20_000 {
            let seconds = index % 4 == 0 ? next() % 100 + 1 : next() % 4_294_967_296
            // 0 to 6 trailing zeros (6: a whole second).
            let step: UInt64 = [1, 10, 100, 1000, 10_000, 100_000, 1_000_000][index % 7]
            let micros = next() % 1_000_000 / step * step
            times.append(Double(seconds * 1_000_000 + micros) / 1e6)
        }
        for time in times {
            var expected = time.description
            if expected.hasSuffix(".0") { expected.removeLast(2) }
            let status = HeldSocketStatus(app: "a", name: "b", kind: "tcp", bytesAvailable: 0, peerClosed: false, watching: true,
                                          registeredAt: time)
            let written = Self.direct(status)
            #expect(written.contains("\"registeredAt\":\(expected),"), "\(time)")
            let read = try WireCodec().decode(HeldSocketStatus.self, from: ArraySlice(written.utf8))
            #expect(read.registeredAt == time, "\(time)")
        }
        for time in times.prefix(40) {
            let status = HeldSocketStatus(app: "a", name: "b", kind: "tcp", bytesAvailable: 0, peerClosed: false, watching: true,
                                          registeredAt: time)
            #expect(Self.direct(status) == (try Self.foundation(status)), "\(time)")
        }
    }

    @Test("bodies larger than the writer's stack buffer, in packets and alone, as JSONEncoder writes them")
    func largeBodies() throws {
        // Long enough to outgrow the 1 KiB scratch buffer several times over, with escapes
        // (each control character grows six-fold) on both sides of the boundary.
        let long = String(repeating: "a \"quoted\" \u{1}\\ ", count: 700)
        let event = EventMessage(event: 9, kind: .voipSocketReadable, socket: long, bytesAvailable: 1, peerClosed: false,
                                 state: .background, reason: long)
        #expect(Self.direct(event) == (try Self.foundation(event)))
        let sockets = (0..<300).map { index in
            HeldSocketStatus(app: "app", name: "socket-\(index)", kind: "unix-stream", bytesAvailable: index, peerClosed: index % 2 == 0,
                             watching: true, registeredAt: 1795331360.6424584 + Double(index))
        }
        let reply = Reply(id: 12, result: SocketsResult(sockets: sockets))
        #expect(Self.direct(reply) == (try Self.foundation(reply)))
        for (type, body) in [(MessageType.event, Self.direct(event)), (.reply, Self.direct(reply))] {
            let packet = type == .event ? try WireCodec().packet(.event, event) : try WireCodec().packet(.reply, reply)
            let decoded = try Frame.decode(bytes: packet, length: packet.count, descriptors: 0, controlTruncated: false)
            #expect(decoded.type == type)
            #expect(String(decoding: decoded.body, as: UTF8.self) == body)
        }
        // Appended after what the array already holds.
        var bytes = Array("prefix".utf8)
        event.appendJSON(to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "prefix" + (try Self.foundation(event)))
    }

    @Test("a body too large for a frame is refused")
    func tooLarge() {
        let huge = String(repeating: "x", count: Frame.maximumSize)
        let event = EventMessage(event: 1, kind: .voipSocketReadable, state: .background, reason: huge)
        #expect(throws: ProtocolError.self) { try WireCodec().packet(.event, event) }
    }

    @Test("a packet of a directly encoded body carries the right length")
    func packets() throws {
        let message = EventMessage(event: 7, kind: .voipSocketReadable, socket: "sip", bytesAvailable: 10, peerClosed: false,
                                   state: .background, reason: "data on sip")
        let packet = try WireCodec().packet(.event, message)
        let decoded = try Frame.decode(bytes: packet, length: packet.count, descriptors: 0, controlTruncated: false)
        #expect(decoded.type == .event)
        #expect(String(decoding: decoded.body, as: UTF8.self) == (try Self.foundation(message)))
    }
}
