import Foundation
import Glibc
import Testing
import VoipClient
import VoipdProtocol
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// How requests are read on both sides of a connection: voipd reads one frame per report of
/// a connection (the loop reports it again while more wait), and `VoipdConnection` waits for
/// a reply in a blocking receive bounded by `SO_RCVTIMEO`, one slice at a time, rather than a
/// `poll` before each read.
@Suite("Request turns", .serialized)
struct RequestTurnTests {
    @Test("requests sent back to back, more than a turn of the loop once read, are all answered in order; another client is served meanwhile")
    func backToBackRequests() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let client = try RawClient(socketPath: harness.socketPath)
        let count = 100
        for id in 1...count { try client.request(type: 17, #"{"id": \#(id)}"#) }
        // Another connection's request, sent after all of them, is answered too.
        _ = try VoipdControl(socketPath: harness.socketPath).status()
        for id in 1...count {
            let reply = try client.reply()
            #expect(reply.ok && reply.id == id, "reply \(id): \(reply.json)")
        }
    }

    @Test("a reply that comes later than one blocking receive waits is read; a request with no reply times out at its deadline, not before")
    func blockingReceiveSlices() throws {
        let directory = try makeTemporaryDirectory("voipd-request-turns")
        defer { removeTree(directory) }
        let path = directory + "/control"
        let listener = try Socket.listenUnix(path: path)
        let listening = listener.rawValue
        // The server, on a thread of its own, touches no descriptor of the test's after the
        // accept: it returns when the client's connection closes.
        let server = Thread {
            // The listener does not block: the thread may run before the client connects,
            // so it waits for the connection (with a deadline) before accepting it.
            var ready = pollfd(fd: listening, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 30_000) == 1 else { return }
            let connection = accept(listening, nil, nil)
            guard connection >= 0 else { return }
            defer { close(connection) }
            var buffer = [UInt8](repeating: 0, count: 65537)
            guard recv(connection, &buffer, buffer.count, 0) > 0 else { return }
            // The first request is answered after 1.3 s: past the first slice of the client's
            // wait (1 s). The delay is the case under test, not a synchronisation.
            var pause = timespec(tv_sec: 1, tv_nsec: 300_000_000)
            var rest = timespec()
            while nanosleep(&pause, &rest) == -1 && errno == EINTR { pause = rest }
            let reply = (try? WireCodec().packet(.reply, Reply(id: 1, result: EmptyResult()))) ?? []
            _ = Glibc.send(connection, reply, reply.count, CInt(MSG_NOSIGNAL))
            // The second is never answered; read until the client closes.
            while recv(connection, &buffer, buffer.count, 0) > 0 {}
        }
        server.start()
        let connection = try VoipdConnection(socketPath: path)
        let start = MonotonicInstant.now
        _ = try connection.request(.status, { AppQueryRequest(id: $0) }, expecting: EmptyResult.self, timeout: .seconds(10))
        #expect(MonotonicInstant.now - start >= .milliseconds(1300))
        let second = MonotonicInstant.now
        do {
            _ = try connection.request(.status, { AppQueryRequest(id: $0) }, expecting: EmptyResult.self, timeout: .milliseconds(1500))
            Issue.record("a request nobody answers returned")
        } catch VoipdError.timedOut(_) {
            // As it should.
        }
        let waited = MonotonicInstant.now - second
        #expect(waited >= .milliseconds(1500) && waited < .seconds(10), "timed out after \(waited)")
    }
}
