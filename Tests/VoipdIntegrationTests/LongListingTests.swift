import Foundation
import Testing
import VoipClient
import VoipdProtocol
import VoipdProtocolIO
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// A listing is written a frame at a time as the client reads it: one longer than the
/// client's queue bound arrives whole, and no other reply comes in the middle of it.
@Suite("Long listings", .serialized)
struct LongListingTests {
    /// 3,036 held sockets: a `sockets` reply of about 480 KB, more than the socket's buffer
    /// and the 64 KiB queue bound together.
    static let apps = 12
    static let perApp = 253

    @Test("a listing longer than the client's queue bound arrives whole, and later requests wait for its end")
    func longerThanTheQueueBound() throws {
        let harness = try DaemonHarness(arguments: ["--limit", "clientQueueBytes=65536", "--limit", "heldSocketsPerUser=10000",
                                                    "--socket-quota", "\(Self.perApp)"])
        defer { harness.stop() }
        // Once under TSan at load a request here failed with "the connection to voipd closed":
        // an error shows voipd's log.
        try harness.showingLogOnError { try listing(harness) }
    }

    func listing(_ harness: DaemonHarness) throws {
        var connections: [VoipdConnection] = []
        var peers: [DescriptorBox] = []
        for index in 0..<Self.apps {
            let app = try VoipdConnection(socketPath: harness.socketPath)
            _ = try app.request(.hello, { HelloRequest(id: $0, name: "many\(index)") }, expecting: HelloResult.self)
            for number in 0..<Self.perApp {
                let pair = try Socket.pair()
                _ = try app.request(.registerSocket, { SocketNameRequest(id: $0, name: "s\(number)") },
                                    descriptors: [pair.first.rawValue], expecting: SocketResult.self)
                peers.append(DescriptorBox(pair.second))
            }
            connections.append(app)
        }
        let total = Self.apps * Self.perApp

        // Two requests at once, before reading anything: every frame of the listing, then the status.
        let client = try Socket.connectUnix(path: harness.socketPath)
        let codec = WireCodec()
        _ = try codec.send(.sockets, AppQueryRequest(id: 1), on: client)
        _ = try codec.send(.status, AppQueryRequest(id: 2), on: client)
        var listed: [HeldSocketStatus] = []
        var frames = 0
        let deadline = Deadline(.seconds(30))
        while true {
            #expect(waitReadable(client.rawValue, deadline), "the listing stopped after \(frames) frames")
            guard case .processed(.frame(let frame)) = try codec.receive(from: client) else {
                Issue.record("voipd closed the connection after \(frames) frames; log:\n\(ProcFS.read(harness.logPath) ?? "")")
                return
            }
            frames += 1
            let reply = try JSONDecoder().decode(Reply<SocketsResult>.self, from: Data(frame.body))
            #expect(reply.id == 1, "frame \(frames) is not the listing's")
            listed += reply.result?.sockets ?? []
            if reply.more != true { break }
        }
        #expect(frames > 6)
        #expect(listed.count == total)
        let keys = listed.map { [$0.app, $0.name] }
        #expect(keys == keys.sorted { $0.lexicographicallyPrecedes($1) }, "by app, then name")
        // Registered at a time to the microsecond: 16 digits, which a client reads exactly
        // without strtod (docs/BENCHMARKS.md, "registeredAt to the microsecond").
        #expect(listed.allSatisfy { Double(UInt64(($0.registeredAt * 1e6).rounded())) / 1e6 == $0.registeredAt })
        #expect(waitReadable(client.rawValue, deadline))
        guard case .processed(.frame(let status)) = try codec.receive(from: client) else {
            Issue.record("no reply to the status request")
            return
        }
        #expect(try JSONDecoder().decode(Reply<StatusResult>.self, from: Data(status.body)).result?.apps.count == Self.apps)
        #expect(try harness.control.sockets().count == total)
        withExtendedLifetime((connections, peers)) {}
    }
}
