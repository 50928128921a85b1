import Foundation
import Glibc
import Testing
@testable import VoipdDaemon
import VoipdProtocol
import VoipdProtocolIO
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// A client's queue bound (`limits.clientQueueBytes`) is at least one frame: a client that
/// reads is never closed as "not reading" for the one frame that waits for it.
@Suite("A client's queue bound", .serialized)
struct ClientQueueBoundTests {
    @Test("a list reply's frame within 64 bytes of the 65,536 maximum, refused by the client's full socket, waits in its queue at the smallest clientQueueBytes (65,536): the client is not disconnected, and reads it whole once it has read what filled its socket (e1356be)")
    func fullFrameWaitsAtTheSmallestBound() throws {
        try withDaemonInProcess(adjust: { $0.limits.clientQueueBytes = 65_536 }) { daemon in
            let peer = try Socket.connectUnix(path: daemon.configuration.socketPath)
            daemon.acceptClients()
            let client = try #require(daemon.clients.values.first)

            // One socket whose name makes the listing's one frame 65,528 bytes long: 8 bytes
            // under the maximum, its cost with the 64 bytes of a queued frame's overhead over
            // the bound.
            func item(_ nameLength: Int) -> HeldSocketStatus {
                HeldSocketStatus(app: "phone", name: String(repeating: "n", count: nameLength), kind: "unix-stream", role: "connected",
                                 bytesAvailable: 0, peerClosed: false, watching: false, registeredAt: 1_700_000_000)
            }
            func packetSize(_ nameLength: Int) throws -> Int {
                var writer = try #require(ListReplyWriter<SocketsResult>(id: 7))
                return writer.packets(of: [item(nameLength)]).map(\.count).reduce(0, +)
            }
            let target = Frame.maximumSize - 8
            let nameLength = target - (try packetSize(0))
            #expect(try packetSize(nameLength) == target)
            #expect(ClientQueues.cost(of: [UInt8](repeating: 0, count: target), descriptors: 0) > daemon.configuration.limits.clientQueueBytes)

            // The client's socket filled to the brim, as by replies it has not read yet.
            let filler = [UInt8](repeating: 0x2a, count: 4096)
            var filled = 0
            while Glibc.send(client.descriptor.rawValue, filler, filler.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) == filler.count { filled += 1 }
            #expect(errno == EAGAIN || errno == EWOULDBLOCK, "filled until the kernel refused: \(Errno.current("send"))")
            #expect(filled > 0)

            var items = [item(nameLength)].makeIterator()
            daemon.streamList(7, SocketsResult.self, to: client) { items.next() }
            guard daemon.clients[client.id] === client, !client.closing else {
                Issue.record("the client was disconnected for the frame that waits for it")
                return
            }
            #expect(client.outbound.map { $0.packet.count } == [target], "the refused frame waits in the queue")

            // The client reads what filled its socket; the frame goes when voipd flushes.
            var buffer = [UInt8](repeating: 0, count: 65_536)
            for index in 0..<filled {
                let n = recv(peer.rawValue, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                #expect(n == filler.count, "filler packet \(index): \(n)")
            }
            daemon.flush(client)
            #expect(client.outbound.isEmpty && client.listing == nil)
            guard try waitReadable(peer.rawValue, until: MonotonicInstant.now + .seconds(10)),
                  case .processed(.frame(let frame)) = try WireCodec().receive(from: peer) else {
                Issue.record("no frame after the filler")
                return
            }
            let reply = try JSONDecoder().decode(Reply<SocketsResult>.self, from: Data(frame.body))
            #expect(reply.id == 7 && reply.more != true)
            #expect(reply.result?.sockets == [item(nameLength)])
        }
    }
}
