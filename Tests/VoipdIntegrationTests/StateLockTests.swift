import Glibc
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// One voipd at a time per state file: a running voipd holds `NAME.lock` beside it for its
/// whole life, across an in-place upgrade, and a second one refuses to start.
@Suite("State file lock", .serialized)
struct StateLockTests {
    /// Starts a second voipd whose state file is `harness`'s (its socket: `socketPath`) and
    /// returns its exit status and output, or records that it kept running.
    static func secondVoipd(beside harness: DaemonHarness, socketPath: String) throws -> (status: ProcessStatus?, output: String) {
        let directory = try makeTemporaryDirectory("voipd-second")
        defer { removeTree(directory) }
        let output = try openFile(directory + "/voipd.log", flags: O_WRONLY | O_CREAT | O_APPEND)
        let second = try TestProcess([Binaries.voipd, "--socket", socketPath, "--state-directory", harness.directory,
                                      "--no-memory-pressure-trigger"] + Binaries.ownConfiguration(in: directory),
                                     output: output.rawValue)
        defer {
            second.stop()
            // Refused, but perhaps after it made its directory in the v1 freezer hierarchy.
            if socketPath != harness.socketPath { removeLegacyFreezerDirectory(socketPath: socketPath) }
        }
        let status: ProcessStatus?
        do {
            status = try second.waitForExit(.seconds(20))
        } catch is TimedOut {
            status = nil
        }
        return (status, ProcFS.read(directory + "/voipd.log") ?? "")
    }

    static func expectRefused(_ second: (status: ProcessStatus?, output: String), by harness: DaemonHarness) throws {
        #expect(second.status == .exited(1), "the second voipd \(second.status.map { "ended with \($0)" } ?? "kept running"): \(second.output)")
        #expect(second.output.contains("the state file \(harness.directory)/voipd.state is in use: voipd pid \(harness.daemon.pid) holds \(harness.directory)/voipd.lock"),
                "\(second.output)")
        // The first keeps its socket, and serves.
        let client = try VoipdControl(socketPath: harness.socketPath)
        #expect(try client.status().isEmpty)
    }

    @Test("while a voipd runs, a second one using its state file refuses to start and says which voipd holds it; the first keeps its socket and serves",
          arguments: [false, true])
    func secondVoipdRefused(sameSocket: Bool) throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let elsewhere = try makeTemporaryDirectory("voipd-elsewhere")
        defer { removeTree(elsewhere) }
        try Self.expectRefused(Self.secondVoipd(beside: harness, socketPath: sameSocket ? harness.socketPath : elsewhere + "/voipd.sock"),
                               by: harness)
    }

    @Test("an in-place upgrade keeps the lock: a second voipd is still refused; once the first has ended, one starts")
    func lockOutlivesUpgrade() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        #expect(try harness.control.upgrade().pid == harness.daemon.pid)
        let elsewhere = try makeTemporaryDirectory("voipd-elsewhere")
        defer { removeTree(elsewhere) }
        try Self.expectRefused(Self.secondVoipd(beside: harness, socketPath: elsewhere + "/voipd.sock"), by: harness)
        harness.daemon.stop()
        // Started once it holds the lock: it reports READY=1.
        let next = try DaemonHarness(arguments: ["--state-directory", harness.directory])
        defer { next.stop() }
        #expect(next.log.contains("voipd listening on"))
    }
}
