import Foundation
import Glibc
import Testing
import TestAppMessages
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// Background transfers through voipd (docs/TRANSFERS.md, issue 11): a real voipd, the test
/// app creating tasks over the control socket, the real `voipd-transfer` agent, and Debian's
/// nginx on a loopback port.
@Suite("Background transfers in voipd", .serialized, .enabled(if: NginxServer.shouldRun, "needs nginx (apt-get install nginx)"))
struct TransferDaemonTests {
    /// nginx, a directory for the downloads, and voipd with `transfers` set to `settings`.
    final class Rig {
        let nginx: NginxServer
        let files: String
        let harness: DaemonHarness

        init(rateLimit: String = "2m", transfers: String = "{}") throws {
            nginx = try NginxServer(rateLimit: rateLimit)
            files = try makeTemporaryDirectory("voipd-transfer-files")
            let configuration = files + "/voipd.json"
            try #"{"transfers": \#(transfers)}"#.write(toFile: configuration, atomically: true, encoding: .utf8)
            harness = try DaemonHarness(arguments: ["--config", configuration])
        }

        func stop() {
            harness.stop()
            nginx.stop()
            removeTree(files)
        }

        /// Serves `count` files of `size` bytes; their SHA-256 by name.
        func serve(_ count: Int, size: Int) throws -> [String: String] {
            var digests: [String: String] = [:]
            for index in 0..<count { digests["f\(index)"] = try nginx.serve("f\(index)", size: size) }
            return digests
        }

        /// The transitions of `app` that resumed or relaunched it for transfer events.
        func transferWakes(_ app: String) throws -> [TransitionRecord] {
            try harness.control.events(app).filter { $0.reason == "background transfer events" }
        }
    }

    /// The completions reported, `count` of them, by task.
    static func completions(_ app: TestAppHandle, _ count: Int, timeout: Duration = .seconds(60)) throws -> [UInt64: (status: Int?, error: String?)] {
        var done: [UInt64: (status: Int?, error: String?)] = [:]
        while done.count < count {
            let report = try app.expect(timeout: timeout) { if case .transferCompleted = $0 { return true } else { return false } }
            if case .transferCompleted(_, let task, let status, let error) = report { done[task] = (status, error) }
        }
        return done
    }

    @Test("an app that queues 5 downloads and is suspended is resumed once with all 5 results; the files are intact")
    func fiveDownloadsOneResume() throws {
        let rig = try Rig(transfers: #"{"maximumConcurrentTransfersPerHost": 8}"#)
        defer { rig.stop() }
        // 6 MB at 2 MB/s: three seconds each, all at once, long after the app is suspended.
        let digests = try rig.serve(5, size: 6 << 20)
        let app = try rig.harness.launchTestApp("fetcher")
        try app.send(.openSession(session: "photos"))
        try app.expect(\.sessionOpened)
        var paths: [UInt64: String] = [:]
        for index in 0..<5 {
            let path = "\(rig.files)/f\(index)"
            try app.send(.download(session: "photos", url: "\(rig.nginx.baseURL)/slow/f\(index)", path: path))
            paths[try app.expect(\.transferCreated).task] = path
        }
        try WakePathTests.suspend(rig.harness, app)
        let done = try Self.completions(app, 5)
        #expect(done.values.allSatisfy { $0.status == 200 && $0.error == nil }, "\(done)")
        // One delivery carried all five: one event, one resume from suspended.
        #expect(app.history.filter { $0.event?.kind == .backgroundTransferEvents }.count == 1)
        let wakes = try rig.transferWakes("fetcher")
        #expect(wakes.count == 1 && wakes.first?.from == .suspended, "\(wakes)")
        // Handled, the app is suspended again.
        try rig.harness.waitForState("fetcher", .suspended)
        for (task, path) in paths {
            let name = String(path.split(separator: "/").last!)
            #expect(try sha256(path) == digests[name], "task \(task): \(path)")
        }
        #expect(try rig.harness.control.transfers().isEmpty, "handled tasks are forgotten")
    }

    @Test("an app that died is relaunched in the background to receive its results")
    func relaunchForResults() throws {
        let rig = try Rig()
        defer { rig.stop() }
        let digests = try rig.serve(1, size: 4 << 20)
        let app = try rig.harness.launchTestApp("uploader")
        try app.send(.openSession(session: "sync"))
        try app.expect(\.sessionOpened)
        let path = rig.files + "/f0"
        try app.send(.download(session: "sync", url: "\(rig.nginx.baseURL)/slow/f0", path: path))
        let task = try app.expect(\.transferCreated).task
        // Killed (a crash, not a force quit): the download goes on without it.
        kill(app.pid, SIGKILL)
        try rig.harness.waitForState("uploader", .terminated)
        let relaunched = try rig.harness.acceptApp("uploader", timeout: .seconds(60))
        #expect(relaunched.pid != app.pid)
        let done = try Self.completions(relaunched, 1)
        #expect(done[task]?.status == 200 && done[task]?.error == nil, "\(done)")
        #expect(try sha256(path) == digests["f0"])
        let wakes = try rig.transferWakes("uploader")
        #expect(wakes.count == 1 && wakes.first?.from == .terminated && wakes.first?.to == .background, "\(wakes)")
    }
}
