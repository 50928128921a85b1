import Foundation
import Glibc
import Testing
@testable import VoipdConfiguration
@testable import VoipdDaemon
import VoipdLifecycle
import VoipdSystem

/// An in-place upgrade carries each record over as its own Codable state plus descriptor
/// numbers (held sockets: as binary records in the JSON). Each record here goes through the
/// snapshot's encoding and back, as the new program reads it, and must come out the same;
/// its descriptors must name the same open files.
@Suite("Upgrade snapshot: every record comes back as it went")
struct SnapshotRoundTripTests {
    @Test("an app: its state (every field), lifecycle, launch command and output, and process")
    func app() throws {
        let output = try makePipe()
        var lifecycle = AppLifecycle(policy: AppPolicy(exitsOnSuspend: true, canLaunch: true, keepAliveMinimum: .seconds(90)))
        _ = lifecycle.handle(.launched(inBackground: true, reason: "test"), now: .origin)
        let state = AppRecord.State(uid: 1234, unclaimed: true, client: 7, reclaimedSockets: 3, reclaimedInodes: [11, 12],
                                    since: 1_700_000_000.5, launchWaiters: [PendingReply(client: 7, request: 9)], reachableFor: .seconds(25))
        Self.expectEveryField(of: state, differsFrom: AppRecord.State(uid: 0, since: 0))
        let app = AppRecord(name: "phone", state: state, lifecycle: lifecycle)
        let command = LaunchCommand(arguments: ["/usr/bin/phone", "--quiet"], environment: ["A=1"], workingDirectory: "/srv",
                                    account: ResolvedManifest.Account(name: "phone", uid: 1234, gid: 1234))
        app.launch = LaunchSpecification(command, standardOutput: output.second)
        app.process = AppProcess(pidfd: try PidFd(pid: getpid()), isChild: false, signalsGroup: true)
        app.process?.identity = ProcessIdentity(pid: getpid(), startTime: 1234, uid: 1234)

        let back = try AppRecord(carried: Self.throughJSON(DaemonSnapshot.App(app)), adopting: Self.adoptCopy)
        #expect(back.name == "phone")
        #expect(back.state == state)
        #expect(try Self.json(back.lifecycle) == Self.json(lifecycle))
        #expect(back.launch?.command == command)
        #expect(back.launch?.standardErrorNumber == nil)
        let carriedOutput = try #require(back.launch?.standardOutputNumber)
        #expect(Self.sameFile(carriedOutput, try #require(app.launch?.standardOutputNumber)))
        let process = try #require(back.process)
        #expect(process.pid == getpid() && !process.isChild && process.signalsGroup)
        #expect(process.identity == ProcessIdentity(pid: getpid(), startTime: 1234, uid: 1234))
        #expect(Self.sameFile(process.pidfd.descriptor.rawValue, try #require(app.process).pidfd.descriptor.rawValue))
    }

    @Test("a connection: its credentials, state (every field) and the frames it has not read, with their descriptors")
    func client() throws {
        let pair = try Socket.pair()
        let passed = try makePipe()
        let client = ClientConnection(id: 42, descriptor: pair.first, credentials: PeerCredentials(pid: 100, uid: 1000, gid: 1001))
        let state = ClientConnection.State(appName: "phone", following: "", followingStates: [.suspended, .background])
        Self.expectEveryField(of: state, differsFrom: ClientConnection.State())
        client.state = state
        let bag = DescriptorBag()
        bag.append(passed.first)
        client.outbound.append(([1, 2, 3], bag))
        client.outbound.append(([4], DescriptorBag()))

        let back = try ClientConnection(carried: Self.throughJSON(DaemonSnapshot.Client(client)), adopting: Self.adoptCopy)
        #expect(back.id == 42 && back.credentials == client.credentials)
        #expect(back.state == state)
        #expect(back.outbound.map(\.packet) == [[1, 2, 3], [4]])
        #expect(back.outbound.map(\.descriptors.count) == [1, 0])
        #expect(Self.sameFile(try #require(back.outbound[0].descriptors.borrowedNumbers.first), bag.borrowedNumbers[0]))
        #expect(back.queuedBytes == ClientQueues.cost(of: [1, 2, 3], descriptors: 1) + ClientQueues.cost(of: [4], descriptors: 0))
        #expect(Self.sameFile(back.descriptor.rawValue, client.descriptor.rawValue))
    }

    @Test("a held socket: its state (every field), the receive mark and its kind too")
    func heldSocket() throws {
        // TCP: a Unix-domain socket's receive mark carries no evidence, and would prove nothing.
        let listener = try Socket.listenTCP()
        let peer = try Socket.connectTCP(host: "127.0.0.1", port: try Socket.localPort(listener))
        try peer.writeAll([1, 2, 3])
        guard let accepted = try Socket.accept(listener, nonBlocking: false).processed() else {
            Issue.record("accept would block")
            return
        }
        let held = HeldSocket(id: 5, app: "phone", name: "sip", descriptor: accepted, kind: "tcp",
                              origin: .inherited, registeredAt: 1_700_000_000.25)
        held.armed = true
        held.arrivedSinceReport = true
        held.peerClosed = true
        held.peerClosedReported = true
        held.reportedMark = ReceiveMark.take(of: held.descriptor)
        let fresh = HeldSocket.State(id: 0, app: "", name: "", kind: "", origin: .registered, registeredAt: 0,
                                     mark: ReceiveMark.take(of: try makePipe().first))
        Self.expectEveryField(of: held.state, differsFrom: fresh)

        // As the upgrade carries it: a binary record in the table, the table in the snapshot's JSON.
        let table = try Self.throughJSON(HeldSocketTable([held]))
        let saved = try #require(table.entries.first)
        #expect(table.entries.count == 1)
        let back = HeldSocket(state: saved.state, socketKind: saved.socketKind, descriptor: try Self.adoptCopy(saved.descriptor))
        #expect(back.state == held.state)
        #expect(back.state.mark == held.state.mark)
        #expect(back.socketKind == held.socketKind && back.socketKind?.name == "tcp")
        #expect(Self.sameFile(back.descriptor.rawValue, held.descriptor.rawValue))
    }

    @Test("a whole snapshot reads back from its memfd, and every format keeps each app's name and process in place")
    func snapshotAndEnvelope() throws {
        let app = AppRecord(name: "phone", uid: 1000, lifecycle: AppLifecycle(), since: 1)
        app.process = AppProcess(pidfd: try PidFd(pid: getpid()), isChild: true)
        let snapshot = DaemonSnapshot(listener: 3, clientTable: ClientTable.State(boundControlSocket: true, nextClientID: 9),
                                      persistence: Persistence.State(appResourceLimits: []), locked: true, clients: [],
                                      apps: [DaemonSnapshot.App(app)], eventLoop: EventLoop.Carried(urgentSet: 4, nextToken: 1), heldSockets: HeldSocketTable(entries: []), timers: [], events: [], metrics: Metrics(),
                                      requester: PendingReply(client: 1, request: 2))
        let file = try FileDescriptor.memoryFile(named: "snapshot-test")
        try file.writeAll(JSONEncoder().encode(snapshot))
        try file.rewind()
        let read = try DaemonSnapshot.read(from: file)
        #expect(read.format == DaemonSnapshot.currentFormat && read.clientTable == snapshot.clientTable && read.locked)
        #expect(read.requester == PendingReply(client: 1, request: 2))
        #expect(read.apps.map(\.name) == ["phone"])

        let envelope = try JSONDecoder().decode(SnapshotEnvelope.self, from: JSONEncoder().encode(snapshot))
        #expect(envelope.format == DaemonSnapshot.currentFormat)
        #expect(envelope.apps.map(\.name) == ["phone"])
        #expect(envelope.apps.first?.process?.pid == getpid())
        #expect(envelope.apps.first?.process?.isChild == true)
    }

    // MARK: - Support

    /// Takes a second descriptor for each number, so that the record it came from keeps its own.
    static func adoptCopy(_ number: CInt) throws(Errno) -> FileDescriptor {
        try FileDescriptor(duplicating: number)
    }

    static func throughJSON<T: Codable>(_ value: T) throws -> T {
        try JSONDecoder().decode(T.self, from: JSONEncoder().encode(value))
    }

    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Whether two descriptors are the same open file (device and inode).
    static func sameFile(_ a: CInt, _ b: CInt) -> Bool {
        var first = stat()
        var second = stat()
        guard fstat(a, &first) == 0, fstat(b, &second) == 0 else { return false }
        return first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }

    /// The sample must set every field to something else than a new record has: a field
    /// added to a record's state and left out of its sample would prove nothing here.
    static func expectEveryField<State: Encodable>(of sample: State, differsFrom fresh: State) {
        let fields = Mirror(reflecting: fresh).children
        for (field, (name, value)) in zip(Mirror(reflecting: sample).children, fields) {
            #expect(String(describing: field.value) != String(describing: value), "\(name ?? "?") is as in a new record: set it in the sample")
        }
    }
}
