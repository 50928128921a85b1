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
