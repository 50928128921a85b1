import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport

/// What voipd reads in the same turn of its loop as SIGTERM. Made deterministic as
/// WakePathTests does it: voipd is stopped, the request and the signals wait for it, and
/// when it continues, its loop's one wait finds them all ready.
@Suite("SIGTERM in the same turn", .serialized)
struct StoppingTurnTests {
    @Test("an upgrade asked for (a request, or SIGUSR2) in the turn that reads SIGTERM is not performed: voipd stops and exits 0, the request told \"voipd is stopping: not upgraded\" (invalidState) before its connection closes",
          arguments: [true, false])
    func upgradeOnceStopping(byRequest: Bool) throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let controller = try RawClient(socketPath: harness.socketPath)
        // Accepted and watched before voipd stops (an answer proves it).
        try controller.request(type: 17, #"{"id": 8}"#)
        #expect(try controller.reply().ok)
        try harness.daemon.pidfd.stopChild()
        defer { try? harness.daemon.pidfd.send(SIGCONT) }
        if byRequest {
            try controller.request(type: 23, #"{"id": 9}"#)
        } else {
            try harness.daemon.pidfd.send(SIGUSR2)
        }
        try harness.daemon.pidfd.send(SIGTERM)
        try harness.daemon.pidfd.send(SIGCONT)
        if byRequest {
            let reply = try controller.reply(timeout: .seconds(20))
            #expect(reply.id == 9 && !reply.ok && reply.code == "invalidState", "\(reply.json)")
            #expect(reply.message == "voipd is stopping: not upgraded", "\(reply.json)")
        }
        #expect(try harness.daemon.waitForExit(.seconds(20)) == .exited(0), "voipd went on (upgraded?): \(harness.log)")
        #expect(harness.log.contains("upgrade not performed: voipd is stopping"), "\(harness.log)")
        #expect(!harness.log.contains("upgrading in place: executing"), "\(harness.log)")
    }
}
