import Foundation
import Glibc
import Testing
@testable import VoipdDaemon
@testable import VoipdSystem
import VoipdLifecycle
import VoipdVocabulary

/// The held sockets of an in-place upgrade travel as binary records (``HeldSocketTable``):
/// every kind of value a record holds comes back as it went, and damaged records are
/// refused with an error, never misread or read past their end.
@Suite("Upgrade snapshot: the held sockets' binary records")
struct HeldSocketTableTests {
    @Test("sockets of several apps, kinds and origins, with every kind of receive mark, come back the same")
    func roundTrip() throws {
        let table = HeldSocketTable(entries: Self.sample)
        let back = try JSONDecoder().decode(HeldSocketTable.self, from: JSONEncoder().encode(table))
        #expect(back == table)
        // The same value is always the same bytes (a listener's peers are a set).
        #expect(back.records() == table.records())
        #expect(try HeldSocketTable(records: table.records(), count: Self.sample.count) == table)
    }

    @Test("a table cut short anywhere, or with bytes after its last record, is refused")
    func damaged() throws {
        let records = HeldSocketTable(entries: Self.sample).records()
        for length in 0..<records.count {
            #expect(throws: BinaryRecordError.self, "cut at \(length)") {
                try HeldSocketTable(records: Array(records[..<length]), count: Self.sample.count)
            }
        }
        #expect(throws: BinaryRecordError.self) { try HeldSocketTable(records: records + [0], count: Self.sample.count) }
        #expect(throws: BinaryRecordError.self) { try HeldSocketTable(records: records, count: Self.sample.count + 1) }
        #expect(throws: BinaryRecordError.self) { try HeldSocketTable(records: records, count: Self.sample.count - 1) }
        #expect(try HeldSocketTable(records: [], count: 0).entries.isEmpty)
    }

    @Test("flags, origins, marks and strings the layout does not have are refused")
    func invalidValues() throws {
        let one = HeldSocketTable(entries: [Self.sample[0]]).records()
        // descriptor (4), token (8), id (8), then the flags byte.
        let flags = 20
        var unknownFlag = one
        unknownFlag[flags] |= 0x80
        var sameAppFirst = one
        sameAppFirst[flags] |= 1 << 4
        #expect(throws: BinaryRecordError.self) { try HeldSocketTable(records: unknownFlag, count: 1) }
        #expect(throws: BinaryRecordError.self) { try HeldSocketTable(records: sameAppFirst, count: 1) }

        var writer = BinaryRecordWriter()
        writer.append("\u{e9}")
        var invalidUTF8 = writer.bytes
        invalidUTF8[4] = 0xff
        var reader = BinaryRecordReader(invalidUTF8)
        #expect(throws: BinaryRecordError.self) { try reader.readString() }

        for tag: UInt8 in [4, 0xff] {
            var reader = BinaryRecordReader([tag])
            #expect(throws: BinaryRecordError.self) { try ReceiveMark(reading: &reader) }
        }
        var tooMany = BinaryRecordWriter()
        tooMany.append(UInt8(2))
        tooMany.append(UInt32(ReceiveMark.connectionLimit + 1))
        var tooManyReader = BinaryRecordReader(tooMany.bytes)
        #expect(throws: BinaryRecordError.self) { try ReceiveMark(reading: &tooManyReader) }
    }

    @Test("a table of another layout is refused, and so is the snapshot that holds it, its apps resumed")
    func otherLayout() throws {
        let table = HeldSocketTable(entries: Self.sample)
        var object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(table)) as? [String: Any])
        object["layout"] = Int(HeldSocketTable.layout) + 1
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(HeldSocketTable.self, from: JSONSerialization.data(withJSONObject: object))
        }

        let app = AppRecord(name: "phone", uid: 1000, lifecycle: AppLifecycle(), since: 1)
        app.process = AppProcess(pidfd: try PidFd(pid: getpid()), isChild: true)
        let snapshot = DaemonSnapshot(listener: 3, clientTable: ClientTable.State(boundControlSocket: true, nextClientID: 9),
                                      persistence: Persistence.State(appResourceLimits: []), locked: false, clients: [],
                                      apps: [DaemonSnapshot.App(app)], eventLoop: EventLoop.Carried(urgentSet: 4, nextToken: 9), heldSockets: table, timers: [], events: [], metrics: Metrics(),
                                      requester: nil)
        var whole = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(snapshot)) as? [String: Any])
        whole["heldSockets"] = object
        let file = try FileDescriptor.memoryFile(named: "snapshot-test")
        try file.writeAll(Array(try JSONSerialization.data(withJSONObject: whole)))
        try file.rewind()
        do {
            _ = try DaemonSnapshot.read(from: file)
            Issue.record("a snapshot with held sockets of another layout was read")
        } catch let error as UpgradeRefused {
            #expect(error.description.contains("layout"))
            #expect(error.description.contains("1 apps resumed"))
        }
    }

    @Test("close_range marks every descriptor from a number up close-on-exec")
    func closeOnExecFrom() throws {
        // Far above what this process has open: the call reaches every descriptor from the
        // number up, and the other tests' must stay as they are.
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let pipe = try makePipe()
        let high = fcntl(pipe.first.rawValue, F_DUPFD, CInt(limit.rlim_cur) - 2)
        try #require(high >= 0, "no descriptor free below the limit")
        let copy = FileDescriptor(adopting: high)
        #expect(fcntl(copy.rawValue, F_GETFD) & FD_CLOEXEC == 0)
        try FileDescriptor.setCloseOnExec(from: copy.rawValue)
        #expect(fcntl(copy.rawValue, F_GETFD) & FD_CLOEXEC != 0)
    }

    // MARK: - Support

    static let sample: [HeldSocketTable.Entry] = {
        let v4 = InetEndpoint(address: IPAddress("192.0.2.7")!, port: 5060)
        let v6 = InetEndpoint(address: IPAddress("2001:db8::1")!, port: 65535)
        let tcp = SocketKind(domain: AF_INET, type: Socket.streamType, isListening: false, isConnected: true, localPort: 40000)
        let listener = SocketKind(domain: AF_INET6, type: Socket.streamType, isListening: true, isConnected: false, localPort: 5061)
        let unix = SocketKind(domain: AF_UNIX, type: Socket.seqpacketType, isListening: false, isConnected: true, localPort: nil)
        func state(_ id: UInt64, _ app: AppID, _ name: String, _ kind: String, _ origin: HeldSocketOrigin, flags: Int,
                   mark: ReceiveMark.Evidence, reported: ReceiveMark.Evidence?) -> HeldSocket.State {
            HeldSocket.State(id: id, app: app, name: name, kind: kind, origin: origin, registeredAt: 1_700_000_000.125 + Double(id),
                             armed: flags & 1 != 0, arrivedSinceReport: flags & 2 != 0, peerClosed: flags & 4 != 0,
                             peerClosedReported: flags & 8 != 0, mark: ReceiveMark(evidence: mark),
                             reportedMark: reported.map { ReceiveMark(evidence: $0) })
        }
        return [
            .init(descriptor: 7, token: 100, state: state(1, "phone", "sip", "tcp", .registered, flags: 15, mark: .streamBytes(UInt64.max),
                                              reported: .streamBytes(12)), socketKind: tcp),
            .init(descriptor: 8, token: 200, state: state(2, "phone", "sip-listener", "tcp", .adopted, flags: 1, mark: .connections([v4, v6]),
                                              reported: .connections([])), socketKind: listener),
            .init(descriptor: 9, token: 300, state: state(3, "phone", "rtp", "udp", .inherited, flags: 6,
                                              mark: .datagram(lastRead: nil, takenAt: -5, queueWasEmpty: true), reported: nil), socketKind: nil),
            .init(descriptor: 1_000_000, token: UInt64.max, state: state(UInt64.max, "ph\u{f6}ne \u{1F4DE} with a name longer than fifteen bytes", "",
                                                      "udp", .registered, flags: 0,
                                                      mark: .datagram(lastRead: Int64.min, takenAt: Int64.max, queueWasEmpty: false),
                                                      reported: ReceiveMark.Evidence.none), socketKind: unix),
            .init(descriptor: 0, token: 500, state: state(5, "zz", "\u{0}\"\\", "voip", .inherited, flags: 8, mark: .none, reported: nil),
                  socketKind: nil),
        ]
    }()
}
