import Foundation
import Glibc
import Testing
import TestAppMessages
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// Background transfers outlive voipd (issue 11, "Durable"): the tasks are in their store
/// beside the state file and the partial files beside their destinations, so a voipd started
/// again carries on where the last one stopped, and the app, which reconnects by itself,
/// gets its result. nginx goes away in the middle too: the download resumes with a range.
@Suite("Background transfers across restarts", .serialized, .enabled(if: NginxServer.shouldRun, "needs nginx (apt-get install nginx)"))
struct TransferRestartTests {
    enum Restart: String, CaseIterable, CustomTestStringConvertible {
        /// `systemctl restart`: SIGTERM, and a new voipd.
        case plain
        /// voipd killed, and started again by a service manager that kept its control socket
        /// and its file-descriptor store.
        case crashUnderStore
        /// `voipctl upgrade`: voipd executes itself again in place, its apps and connections kept.
        case upgrade

        var testDescription: String { rawValue }
    }

    /// nginx's access log lines for GETs of `path` answered with `status`, once there is one.
    static func gets(_ nginx: NginxServer, _ path: String, _ status: Int) throws -> [String] {
        let answered = { (line: String) in line.hasPrefix("GET \(path) \(status) ") }
        return try nginx.requests(match: answered).filter(answered)
    }

    /// Has `app` download `url` to `path` in a new session, does `before` (while the download
    /// starts), and waits until the partial file has bytes; the task and its partial file.
    /// With `store` (voipd's transfer store), it also waits until the task's record holds what
    /// a Range request needs: a voipd killed before its loop handled the response would
    /// rightly start the download again.
    static func download(_ app: TestAppHandle, _ url: String, to path: String, store: String? = nil,
                         before: () throws -> Void = {}) throws -> (UInt64, String) {
        try app.send(.openSession(session: "keep", discretionary: nil))
        try app.expect(\.sessionOpened)
        try app.send(.download(session: "keep", url: url, path: path))
        let task = try app.expect(\.transferCreated).task
        try before()
        let slash = path.lastIndex(of: "/")!
        let partial = "\(path[..<slash])/.\(path[path.index(after: slash)...]).\(task).voipd-partial"
        try #require(try waitForNonEmptyFile(partial, until: MonotonicInstant.now + .seconds(20)), "the download started")
        if let store {
            try #require(try waitForText("resumeValidator", in: store + "/tasks/\(task).json", until: MonotonicInstant.now + .seconds(20)),
                         "voipd recorded the response's validator")
        }
        return (task, partial)
    }

    /// nginx serving 12 MB at 2 MB/s, a voipd at a tenth of real time, and the test app
    /// "patient" downloading the file through it, under way (its partial file has bytes).
    final class SlowDownload {
        let nginx: NginxServer
        /// The SHA-256 of the file nginx serves.
        let digest: String
        let harness: DaemonHarness
        /// Where the download goes, in a directory of its own.
        let path: String
        var files: String { parentDirectory(path) }
        /// The app, and its download's task.
        let download: (app: TestAppHandle, task: UInt64)
        var app: TestAppHandle { download.app }
        var task: UInt64 { download.task }

        init() throws {
            nginx = try NginxServer(rateLimit: "2m")
            var cleanup: [() -> Void] = [nginx.stop]
            do {
                digest = try nginx.serve("f0", size: 12 << 20)
                harness = try DaemonHarness(timeScale: 0.1)
                cleanup.insert(harness.stop, at: 0)
                let files = try makeTemporaryDirectory("voipd-transfer-files")
                cleanup.insert({ removeTree(files) }, at: 0)
                path = files + "/f0"
                let app = try harness.launchTestApp("patient")
                download = (app, try TransferRestartTests.download(app, "\(nginx.baseURL)/slow/f0", to: path).0)
            } catch {
                cleanup.forEach { $0() }
                throw error
            }
        }

        func stop() {
            removeTree(files)
            harness.stop()
            nginx.stop()
        }
    }

    @Test("voipd restarted in the middle of a download: the download goes on from its partial file with a Range request, and the suspended app gets its result",
          arguments: Restart.allCases)
    func restartMidDownload(_ restart: Restart) throws {
        // 12 MB at 2 MB/s: five seconds or more, of which the restart takes a part.
        let nginx = try NginxServer(rateLimit: "2m")
        defer { nginx.stop() }
        let digest = try nginx.serve("f0", size: 12 << 20)
        let rig = try ServiceRig()
        defer { rig.stop() }
        let files = try makeTemporaryDirectory("voipd-transfer-files")
        defer { removeTree(files) }
        // The service manager's control socket, kept across the crash (a plain voipd binds its own).
        let listener = try Socket.listenUnix(path: restart == .crashUnderStore ? rig.socketPath : rig.directory + "/unused.sock")
        let control: [(name: String, descriptor: CInt)] = restart == .crashUnderStore ? [("control", listener.rawValue)] : []
        let first = try RestartRecoveryTests.start(rig, passing: control)
        let (client, follower) = try RestartRecoveryTests.controls(rig)
        _ = try client.launch([Binaries.testApp, "--report", rig.reports.path], name: "keeper")
        let app = try rig.acceptApp("keeper")
        let path = files + "/f0"
        let (task, partial) = try Self.download(app, "\(nginx.baseURL)/slow/f0", to: path, store: rig.directory + "/voipd.transfers", before: {
            try RestartRecoveryTests.suspend("keeper", client, follower)
        })

        switch restart {
        case .plain: #expect(try rig.terminate(first) == .exited(0))
        case .crashUnderStore: try RestartRecoveryTests.crash(first)
        case .upgrade: #expect(try client.upgrade().pid == first.pid)
        }
        let kept = fileSize(partial) ?? 0
        #expect(kept > 0 && kept < 12 << 20, "the partial file stays for the next voipd: \(kept) bytes")
        if restart != .upgrade {
            let stored = restart == .crashUnderStore ? rig.manager.store.map { ($0.name, $0.descriptor.rawValue) } : []
            _ = try RestartRecoveryTests.start(rig, passing: control + stored)
            _ = try app.expect(\.reconnection)
        }
        let done = try TransferDaemonTests.completions(app, 1, timeout: .seconds(60))
        #expect(done[task]?.status == 206 && done[task]?.error == nil, "the resumed response: \(done)\n\(rig.log)")
        #expect(try sha256(path) == digest)
        #expect(access(partial, F_OK) != 0)
        let ranged = try Self.gets(nginx, "/slow/f0", 206)
        #expect(ranged.count == 1 && ranged.allSatisfy { $0.contains("range=\"bytes=") && !$0.contains("if_range=\"-\"") },
                "the second voipd asked for the rest, validated: \(nginx.requests)")
        if restart == .upgrade {
            // The agent of the old program was voipd's child: reaped, not left a zombie.
            let zombies = TmuxSession.children(of: first.pid).filter { processState($0) == "Z" }
            #expect(zombies.isEmpty, "zombie children of voipd: \(zombies)")
        }
    }

    @Test("nginx stopped in the middle of a download through voipd and started again: the download resumes with a Range request, and the SHA-256 matches")
    func serverRestartMidDownload() throws {
        let rig = try SlowDownload()
        defer { rig.stop() }
        let (nginx, digest, app, path, task) = (rig.nginx, rig.digest, rig.app, rig.path, rig.task)
        // Its connection cut, the attempt fails; voipd retries after its back-off (a tenth of
        // 1 s, doubling) until nginx is back.
        nginx.stop()
        try nginx.start()
        let done = try TransferDaemonTests.completions(app, 1, timeout: .seconds(60))
        #expect(done[task]?.status == 206 && done[task]?.error == nil, "the resumed response: \(done)")
        #expect(try sha256(path) == digest)
        let ranged = try Self.gets(nginx, "/slow/f0", 206)
        #expect(!ranged.isEmpty && ranged.allSatisfy { $0.contains("range=\"bytes=") }, "\(nginx.requests)")
    }
}
