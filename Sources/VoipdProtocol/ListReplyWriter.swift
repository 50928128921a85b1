/// Writes a list reply whose items encode directly, one frame at a time: as many items in
/// each frame as fit, every frame but the last with `"more": true`, byte for byte what
/// encoding `Reply(id:result:more:)` of each chunk writes. Each item is encoded once, when
/// its frame is written: a listing of 19,000 held sockets costs voipd the sockets, not
/// measuring their JSON again for every frame, and its memory is a frame's, not the list's.
public struct ListReplyWriter<List: ListResult & DirectJSONEncodable> where List.Item: DirectJSONEncodable {
    /// The envelope before the items of a frame with more to follow, and of the last one
    /// (`{"id":7,"more":true,"ok":true,"result":{"sockets":[`), and what closes both (`]}}`).
    private let continuedPrefix: [UInt8]
    private let lastPrefix: [UInt8]
    private let suffix: [UInt8]
    /// The most bytes of items a frame takes.
    private let room: Int
    /// The encoding of the item that did not fit in the last frame: it starts the next.
    private var carried: [UInt8] = []
    private var finished = false

    /// Nil when the list's JSON is not the one array this writer expects (then the caller
    /// encodes each chunk whole).
    public init?(id: UInt64, maximumPacket: Int = Frame.maximumSize) {
        func envelope(more: Bool) -> (prefix: [UInt8], suffix: [UInt8])? {
            var bytes: [UInt8] = []
            Reply(id: id, result: List(items: []), more: more).appendJSON(to: &bytes)
            // The only "[]" is the empty list's: keys are fixed names and the id a number.
            guard let open = bytes.indices.dropLast().first(where: { bytes[$0] == UInt8(ascii: "[") && bytes[$0 + 1] == UInt8(ascii: "]") })
            else { return nil }
            return (Array(bytes[...open]), Array(bytes[(open + 1)...]))
        }
        guard let continued = envelope(more: true), let last = envelope(more: false), continued.suffix == last.suffix else { return nil }
        continuedPrefix = continued.prefix
        lastPrefix = last.prefix
        suffix = last.suffix
        room = maximumPacket - Frame.headerSize - continuedPrefix.count - suffix.count
    }

    /// The next packet, header included, of the items `nextItem` gives until it returns nil;
    /// nil once the last packet was written. An item too large for a frame of its own still
    /// gets one, larger than the maximum (the sender refuses it).
    public mutating func nextPacket(_ nextItem: () -> List.Item?) -> [UInt8]? {
        guard !finished else { return nil }
        var items: [UInt8] = []
        swap(&items, &carried)
        while let item = nextItem() {
            let start = items.count
            if start > 0 { items.append(UInt8(ascii: ",")) }
            item.appendJSON(to: &items)
            guard items.count > room, start > 0 else { continue }
            // This item starts the next frame: this one goes without it.
            carried = Array(items[(start + 1)...])
            items.removeSubrange(start...)
            return packet(continuedPrefix, items)
        }
        finished = true
        return packet(lastPrefix, items)
    }

    /// Every packet of `items` (for a list already made).
    public mutating func packets(of items: [List.Item]) -> [[UInt8]] {
        var iterator = items.makeIterator()
        var packets: [[UInt8]] = []
        while let packet = nextPacket({ iterator.next() }) { packets.append(packet) }
        return packets
    }

    private func packet(_ prefix: [UInt8], _ items: [UInt8]) -> [UInt8] {
        var packet = Frame.encode(type: .reply, body: [], descriptorCount: 0)
        packet.reserveCapacity(Frame.headerSize + prefix.count + items.count + suffix.count)
        packet += prefix
        packet += items
        packet += suffix
        Frame.setBodyLength(of: &packet)
        return packet
    }
}
