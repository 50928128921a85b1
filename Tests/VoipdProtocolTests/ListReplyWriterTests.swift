import Foundation
import Testing
import VoipdProtocol
import VoipdVocabulary

/// A long list reply written a frame at a time must be, frame by frame, what encoding each
/// chunk's `Reply` whole writes, with as many items in each frame as fit.
@Suite("List replies written a frame at a time")
struct ListReplyWriterTests {
    static func sockets(_ count: Int) -> [HeldSocketStatus] {
        (0..<count).map { index in
            let app: String = index % 3 == 0 ? "a \"quoted\" app/\(index)" : "app\(index % 7)"
            let listening = index % 5 == 0
            let registeredAt = 1795331360.6424584 + Double(index)
            return HeldSocketStatus(app: app, name: "socket \(index) ünï", kind: "tcp", role: listening ? "listening" : nil,
                                    bytesAvailable: index * 17, connectionsWaiting: listening ? index : nil,
                                    peerClosed: index % 2 == 0, watching: index % 3 == 1, registeredAt: registeredAt)
        }
    }

    static func foundation(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }

    @Test("frames are JSONEncoder's chunks, full, and together the whole list", arguments: [0, 1, 2, 700, 3000])
    func frames(count: Int) throws {
        let items = Self.sockets(count)
        for maximum in [Frame.maximumSize, 1024] {
            var writer = try #require(ListReplyWriter<SocketsResult>(id: 4242, maximumPacket: maximum))
            let packets = writer.packets(of: items)
            var rest = items[...]
            for (index, packet) in packets.enumerated() {
                let frame = try Frame.decode(bytes: packet, length: packet.count, descriptors: 0, controlTruncated: false)
                #expect(frame.type == .reply)
                #expect(packet.count <= maximum)
                let reply = try JSONDecoder().decode(Reply<SocketsResult>.self, from: Data(frame.body))
                let last = index == packets.count - 1
                let chunk = try #require(reply.result?.sockets)
                #expect(chunk == Array(rest.prefix(chunk.count)))
                rest = rest.dropFirst(chunk.count)
                #expect(Array(frame.body) == (try Self.foundation(Reply(id: 4242, result: SocketsResult(sockets: chunk), more: !last))))
                if !last, let next = rest.first {
                    // Full: the next item would not have fitted.
                    let fuller = try Self.foundation(Reply(id: 4242, result: SocketsResult(sockets: chunk + [next]), more: true))
                    #expect(Frame.headerSize + fuller.count > maximum)
                }
            }
            #expect(rest.isEmpty)
            #expect(writer.nextPacket { nil } == nil, "nothing after the last frame")
        }
    }

    @Test("an item too large for a frame gets one of its own, larger than the maximum")
    func oversized() throws {
        var writer = try #require(ListReplyWriter<SocketsResult>(id: 1, maximumPacket: 512))
        let big = HeldSocketStatus(app: String(repeating: "x", count: 700), name: "n", kind: "udp", bytesAvailable: 0,
                                   peerClosed: false, watching: false, registeredAt: 1)
        let packets = writer.packets(of: Self.sockets(1) + [big] + Self.sockets(1))
        #expect(packets.count == 3)
        #expect(packets[1].count > 512)
        #expect(packets[0].count <= 512 && packets[2].count <= 512)
    }
}
