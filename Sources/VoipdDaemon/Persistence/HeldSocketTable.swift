import FoundationEssentials
import VoipdSystem
import VoipdVocabulary

/// An in-place upgrade's held sockets, the snapshot's bulk: each socket's ``HeldSocket/State``,
/// its kind and its descriptor's number in a fixed binary record (``layout``), the records
/// together as one base64 string in the snapshot's JSON.
///
/// Codable through `JSONEncoder` cost about 20 µs a socket, both sides together (keys,
/// containers and generic metadata for a dozen fields and a receive mark); these records cost
/// about what copying the fields costs. The price is that the layout is written out by hand
/// here: a field added to `State` must be added to ``Entry/write(to:)`` and
/// ``Entry/init(reading:)`` too, and ``layout`` raised. SnapshotRoundTripTests sets every
/// field of `State` (it checks that it does) and carries it through this table, so a field
/// left out fails the test rather than being lost in an upgrade.
struct HeldSocketTable: Equatable {
    /// The record layout this program writes and reads. A table of another layout is
    /// refused like a snapshot of another format.
    static let layout: UInt32 = 1

    struct Entry: Equatable {
        var descriptor: CInt
        /// Its registration in the held sockets' epoll set, which the upgrade carries too.
        var token: UInt64
        var state: HeldSocket.State
        /// What the socket is, as voipd read it when it took it: carried rather than read
        /// again (three system calls a socket).
        var socketKind: SocketKind?
    }

    var entries: [Entry]

    init(entries: [Entry]) {
        self.entries = entries
    }

    init(_ sockets: [HeldSocket]) {
        entries = sockets.map { Entry(descriptor: $0.descriptor.rawValue, token: $0.token, state: $0.state, socketKind: $0.socketKind) }
    }

    /// The records, one after the other.
    func records() -> [UInt8] {
        // About 60 bytes a socket with short names.
        var writer = BinaryRecordWriter(capacity: entries.count * 64)
        var previous: Entry?
        for entry in entries {
            entry.write(to: &writer, after: previous)
            previous = entry
        }
        return writer.bytes
    }

    /// The entries that `records` holds: exactly `count`, and nothing after them.
    init(records: [UInt8], count: Int) throws(BinaryRecordError) {
        var reader = BinaryRecordReader(records)
        var entries: [Entry] = []
        entries.reserveCapacity(min(count, records.count / Entry.smallest))
        var previous: Entry?
        for _ in 0..<count {
            let entry = try Entry(reading: &reader, after: previous)
            entries.append(entry)
            previous = entry
        }
        guard reader.isAtEnd else { throw .invalid("bytes after the last of \(count) held sockets", at: reader.offset) }
        self.entries = entries
    }
}

extension HeldSocketTable: Codable {
    private enum CodingKeys: String, CodingKey {
        case layout, count, records
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.layout, forKey: .layout)
        try container.encode(entries.count, forKey: .count)
        try container.encode(Data(records()), forKey: .records)
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let layout = try container.decode(UInt32.self, forKey: .layout)
        guard layout == Self.layout else {
            throw DecodingError.dataCorruptedError(forKey: .layout, in: container, debugDescription: "held sockets in layout \(layout); this voipd reads layout \(Self.layout)")
        }
        let count = try container.decode(Int.self, forKey: .count)
        guard count >= 0 else { throw DecodingError.dataCorruptedError(forKey: .count, in: container, debugDescription: "\(count) held sockets") }
        do {
            try self.init(records: [UInt8](try container.decode(Data.self, forKey: .records)), count: count)
        } catch let error as BinaryRecordError {
            throw DecodingError.dataCorruptedError(forKey: .records, in: container, debugDescription: "held sockets: \(error)")
        }
    }
}

extension HeldSocketTable.Entry {
    /// The fewest bytes a record takes.
    static let smallest = 4 + 8 + 8 + 1 + 4 + 1 + 8 + 1 + 1 + 1

    private struct Flags: OptionSet {
        let rawValue: UInt8
        static let armed = Flags(rawValue: 1 << 0)
        static let arrivedSinceReport = Flags(rawValue: 1 << 1)
        static let peerClosed = Flags(rawValue: 1 << 2)
        static let peerClosedReported = Flags(rawValue: 1 << 3)
        /// The app is the previous record's, and not written again (the registry lists
        /// sockets by app).
        static let sameApp = Flags(rawValue: 1 << 4)
        /// The kind is the previous record's, and not written again.
        static let sameKind = Flags(rawValue: 1 << 5)
        static let all: Flags = [.armed, .arrivedSinceReport, .peerClosed, .peerClosedReported, .sameApp, .sameKind]
    }

    /// Layout 1: descriptor (Int32), token (UInt64), id (UInt64), flags (UInt8), app unless the same,
    /// name, kind unless the same, origin (UInt8), registeredAt (Double), mark, reported
    /// mark (optional), socket kind (optional).
    func write(to writer: inout BinaryRecordWriter, after previous: Self?) {
        var flags: Flags = []
        if state.armed { flags.insert(.armed) }
        if state.arrivedSinceReport { flags.insert(.arrivedSinceReport) }
        if state.peerClosed { flags.insert(.peerClosed) }
        if state.peerClosedReported { flags.insert(.peerClosedReported) }
        let sameApp = previous?.state.app == state.app
        let sameKind = previous?.state.kind == state.kind
        if sameApp { flags.insert(.sameApp) }
        if sameKind { flags.insert(.sameKind) }
        writer.append(Int32(descriptor))
        writer.append(token)
        writer.append(state.id)
        writer.append(flags.rawValue)
        if !sameApp { writer.append(state.app.name) }
        writer.append(state.name)
        if !sameKind { writer.append(state.kind) }
        writer.append(Self.code(of: state.origin))
        writer.append(state.registeredAt)
        state.mark.write(to: &writer)
        writer.appendOptional(state.reportedMark) { $1.write(to: &$0) }
        writer.appendOptional(socketKind) { $1.write(to: &$0) }
    }

    init(reading reader: inout BinaryRecordReader, after previous: Self?) throws(BinaryRecordError) {
        let start = reader.offset
        let descriptor = CInt(try reader.read(Int32.self))
        let token = try reader.read(UInt64.self)
        let id = try reader.read(UInt64.self)
        let flags = Flags(rawValue: try reader.readByte())
        guard Flags.all.isSuperset(of: flags) else { throw .invalid("flags \(flags.rawValue)", at: reader.offset - 1) }
        let app: AppID
        if flags.contains(.sameApp) {
            guard let previous else { throw .invalid("a first record with the previous one's app", at: start) }
            app = previous.state.app
        } else {
            app = AppID(try reader.readString())
        }
        let name = try reader.readString()
        let kind: String
        if flags.contains(.sameKind) {
            guard let previous else { throw .invalid("a first record with the previous one's kind", at: start) }
            kind = previous.state.kind
        } else {
            kind = try reader.readString()
        }
        let origin = try Self.origin(code: try reader.readByte(), at: reader.offset - 1)
        let registeredAt = try reader.readDouble()
        let mark = try ReceiveMark(reading: &reader)
        let reportedMark = try reader.readOptional { reader throws(BinaryRecordError) in try ReceiveMark(reading: &reader) }
        let socketKind = try reader.readOptional { reader throws(BinaryRecordError) in try SocketKind(reading: &reader) }
        self.init(descriptor: descriptor, token: token,
                  state: HeldSocket.State(id: id, app: app, name: name, kind: kind, origin: origin, registeredAt: registeredAt,
                                          armed: flags.contains(.armed), arrivedSinceReport: flags.contains(.arrivedSinceReport),
                                          peerClosed: flags.contains(.peerClosed), peerClosedReported: flags.contains(.peerClosedReported),
                                          mark: mark, reportedMark: reportedMark),
                  socketKind: socketKind)
    }

    // Numbers of their own, not the enum's order or names: a case added or renamed must not
    // change what an old record means.
    private static func code(of origin: HeldSocketOrigin) -> UInt8 {
        switch origin {
        case .registered: return 0
        case .inherited: return 1
        case .adopted: return 2
        }
    }

    private static func origin(code: UInt8, at offset: Int) throws(BinaryRecordError) -> HeldSocketOrigin {
        switch code {
        case 0: return .registered
        case 1: return .inherited
        case 2: return .adopted
        default: throw .invalid("an origin of \(code)", at: offset)
        }
    }
}
