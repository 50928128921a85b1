import Testing
import VoipdProtocol
import VoipdVocabulary

/// The framing: an 8-byte header and a JSON body per packet; every malformed packet gets the
/// error code docs/PROTOCOL.md gives for it.
@Suite("Frames")
struct FrameTests {
    @Test("a frame reads back as it was written")
    func roundTrip() throws {
        let packet = Frame.encode(type: .registerSocket, body: Array(#"{"id":1,"name":"sip"}"#.utf8), descriptorCount: 1)
        #expect(Array(packet[0..<8]) == [21, 0, 0, 0, 2, 0, 1, 1])
        let decoded = try Frame.decode(bytes: packet, length: packet.count, descriptors: 1, controlTruncated: false)
        #expect(decoded.type == .registerSocket)
        #expect(decoded.declaredDescriptors == 1)
        #expect(String(decoding: decoded.body, as: UTF8.self) == #"{"id":1,"name":"sip"}"#)
    }

    @Test("the header's fields are little-endian at their offsets; fewer than 8 bytes are no header")
    func header() {
        let header = FrameHeader(bodyLength: 0x0403_0201, type: 0x0605, descriptors: 7, version: 8)
        var packet: [UInt8] = []
        header.append(to: &packet)
        #expect(packet == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(FrameHeader(parsing: packet) == header)
        #expect(FrameHeader(parsing: Array(packet.dropLast())) == nil)
        packet += Array(repeating: 0, count: 300)
        FrameHeader.setBodyLength(of: &packet)
        #expect(FrameHeader(parsing: packet)?.bodyLength == 300)
    }

    static func code(_ bytes: [UInt8], length: Int? = nil, descriptors: Int = 0, cut: Bool = false) -> ProtocolError.Code? {
        do {
            _ = try Frame.decode(bytes: bytes, length: length ?? bytes.count, descriptors: descriptors, controlTruncated: cut)
            return nil
        } catch {
            return error.code
        }
    }

    @Test("every kind of bad packet is named")
    func badPackets() {
        let good = Frame.encode(type: .status, body: Array(#"{"id":1}"#.utf8), descriptorCount: 0)
        #expect(Self.code(good) == nil)
        #expect(Self.code([1, 2, 3]) == .truncatedFrame, "shorter than a header")
        #expect(Self.code(Array(good.dropLast())) == .truncatedFrame, "shorter than the declared body")
        #expect(Self.code(good + [0x20]) == .truncatedFrame, "longer than the declared body")
        #expect(Self.code(good, length: 70_000) == .frameTooLarge, "the kernel said the packet was longer")
        // Found by Tests/Fuzz (frame): a buffer smaller than the packet read a consistent prefix.
        #expect(Self.code(good, length: good.count + 20) == .truncatedFrame, "the kernel said the packet was longer than what was read")
        var huge = good
        huge.replaceSubrange(0..<4, with: [0xff, 0xff, 0xff, 0x00])
        #expect(Self.code(huge) == .frameTooLarge, "a header declaring more than a frame holds")
        var version = good
        version[7] = 2
        #expect(Self.code(version) == .unsupportedVersion)
        var unknown = good
        unknown[4] = 99
        #expect(Self.code(unknown) == .unknownType)
        #expect(Self.code(good, descriptors: 1) == .descriptorMismatch)
        #expect(Self.code(good, descriptors: 3, cut: true) == .tooManyDescriptors)
    }

    @Test("framing errors close the connection; a bad body or request does not")
    func whatCloses() {
        for code in ProtocolError.Code.allCases {
            let closes = ProtocolError(code, "").closesConnection
            let framing: Set<ProtocolError.Code> = [.truncatedFrame, .frameTooLarge, .unknownType, .unsupportedVersion, .tooManyDescriptors, .descriptorMismatch]
            #expect(closes == framing.contains(code), "\(code)")
        }
    }

    @Test("only registerSocket and launch carry descriptors from a client")
    func descriptorCounts() {
        for type in MessageType.allCases where type.isRequest {
            let expected = type == .registerSocket ? 1 : type == .launch ? 2 : 0
            #expect(type.maximumDescriptorsFromClient == expected, "\(type)")
        }
        #expect(MessageType.registerSocket.minimumDescriptorsFromClient == 1)
        #expect(MessageType.descriptorRoomFromClient > 2)
    }
}
