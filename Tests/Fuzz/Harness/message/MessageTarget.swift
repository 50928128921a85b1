import Foundation
import VoipdProtocol

/// A message body of any type, header already valid: the fuzzer spends its time on the JSON.
/// Requests are decoded as the daemon decodes them. Bodies voipd writes on its wake path
/// without `JSONEncoder` (`event`, `transition`) must come out exactly as `JSONEncoder`
/// writes them, for any value a client could read back.
///
/// Input: the message type (its u16 value's low byte), the descriptors that came with it,
/// then the body.
enum FuzzTarget {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static func run(_ input: [UInt8]) {
        guard input.count >= 2, let type = MessageType(rawValue: UInt16(input[0])) else { return }
        let descriptors = Int(input[1])
        let body = input[2...]
        switch type {
        case .event: checkDirectEncoding(EventMessage.self, body)
        case .transition: checkDirectEncoding(TransitionRecord.self, body)
        default: RequestChecks.check(type: type, body: body, descriptors: descriptors)
        }
    }

    static func checkDirectEncoding<T: DirectJSONEncodable & Decodable & Equatable>(_: T.Type, _ body: ArraySlice<UInt8>) {
        let value: T
        do {
            value = try RequestChecks.codec.decode(T.self, from: body)
        } catch {
            return
        }
        var direct: [UInt8] = []
        value.appendJSON(to: &direct)
        let expected: [UInt8]
        do {
            expected = Array(try encoder.encode(value))
        } catch {
            finding("\(T.self) decoded but JSONEncoder cannot encode it: \(error)")
        }
        require(direct == expected, "\(T.self) written directly as \(String(decoding: direct, as: UTF8.self)), JSONEncoder writes \(String(decoding: expected, as: UTF8.self))")
        do {
            let again = try RequestChecks.codec.decode(T.self, from: direct[...])
            require(again == value, "\(T.self) does not read back the same from \(String(decoding: direct, as: UTF8.self))")
        } catch {
            finding("\(T.self) written directly as \(String(decoding: direct, as: UTF8.self)) does not decode: \(error)")
        }
    }

    static var seeds: [(String, [UInt8])] {
        Samples.messages.map { sample in
            (sample.name, [UInt8(sample.type.rawValue & 0xff), UInt8(sample.descriptors)] + sample.body)
        }
    }
}
