import Glibc
import Testing
import VoipClient
import VoipdSystem

/// The transfer service comes up at start only when its store holds tasks (carrying on with
/// them: `TransferRestartTests.restartMidDownload`, where no request comes before the download
/// goes on), else at the first request that needs it (docs/TRANSFERS.md): an install whose
/// apps use no transfers never pays for the service's start.
@Suite("Background transfers: when the service comes up")
struct TransferStartTests {
    @Test("with no task in its store, the service comes up at the first transfer request, not at start; stats say 0 until then")
    func upAtFirstRequest() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        // The loop reads its first request after the start's setting up of the service
        // (Daemon.run), so this reply comes after whatever the start did.
        let stats = try harness.control.stats()
        let store = harness.directory + "/voipd.transfers"
        for phase in ["waiting", "running", "challenged", "finished"] {
            #expect(stats.contains("voipd_transfer_tasks{phase=\"\(phase)\"} 0"), "\(stats)")
        }
        #expect(stats.contains("voipd_transfer_agents 0") && stats.contains("voipd_transfer_bytes_total 0"), "\(stats)")
        #expect(access(store, F_OK) != 0, "the store is not opened at start: \(harness.log)")
        #expect(!harness.log.contains("transfers: power"), "\(harness.log)")

        #expect(try harness.control.transfers().isEmpty)
        #expect(access(store + "/tasks", F_OK) == 0, "the first transfer request opened the store")
        #expect(harness.log.contains("transfers: power"), "\(harness.log)")
        #expect(try harness.control.stats().contains("voipd_transfer_tasks{phase=\"waiting\"} 0"))
    }
}
