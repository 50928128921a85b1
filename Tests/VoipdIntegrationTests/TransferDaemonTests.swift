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

        init(rateLimit: String = "2m", transfers: String = "{}", timeScale: Double = 1) throws {
            nginx = try NginxServer(rateLimit: rateLimit)
            files = try makeTemporaryDirectory("voipd-transfer-files")
            let configuration = files + "/voipd.json"
            try #"{"transfers": \#(transfers), "suspension": "signal"}"#.write(toFile: configuration, atomically: true, encoding: .utf8)
            harness = try DaemonHarness(timeScale: timeScale, arguments: ["--config", configuration])
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

        /// Has the app create a task that starts only once the app is suspended: the network
        /// is unavailable meanwhile (`voipctl network --available no`).
        func createWhileSuspending(_ app: TestAppHandle, _ command: TestAppCommand) throws {
            try harness.control.setNetwork(NetworkSetting(available: false))
            try app.send(command)
            try app.expect(\.transferCreated)
            try harness.suspend(app)
            try harness.control.setNetwork(NetworkSetting(available: true))
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
        try app.send(.openSession(session: "photos", discretionary: nil))
        try app.expect(\.sessionOpened)
        var paths: [UInt64: String] = [:]
        for index in 0..<5 {
            let path = "\(rig.files)/f\(index)"
            try app.send(.download(session: "photos", url: "\(rig.nginx.baseURL)/slow/f\(index)", path: path))
            paths[try app.expect(\.transferCreated).task] = path
        }
        try rig.harness.suspend(app)
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
        try app.send(.openSession(session: "sync", discretionary: nil))
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

    @Test("an app that chains downloads one by one is resumed later and later: 2.5, 5, 10 s apart at a quarter of the time (docs/TRANSFERS.md's curve)")
    func chainedDownloadsResumeLater() throws {
        // A quarter of the time: the work period starts at 2.5 s and doubles; the coalescing
        // window is 0.5 s.
        let rig = try Rig(rateLimit: "1m", timeScale: 0.25)
        defer { rig.stop() }
        // Each download must end after the app that created it while resumed is suspended
        // again (a running app is handed its events at once, with no resume), and before the
        // work period. nginx's limit_rate lets a second's worth through at once and counts
        // whole seconds, so 2.5 MB at 1 MB/s takes between 1 and 2 s; at 2 MB/s a 2 MB file
        // could arrive at once, while the app was still handling the previous delivery.
        _ = try rig.serve(1, size: 5 << 19)
        let app = try rig.harness.launchTestApp("chainer")
        try app.send(.openSession(session: "chain", discretionary: nil))
        try app.expect(\.sessionOpened)
        try app.send(.chain(session: "chain", url: "\(rig.nginx.baseURL)/slow/f0", directory: rig.files, count: 3))
        try rig.createWhileSuspending(app, .download(session: "chain", url: "\(rig.nginx.baseURL)/slow/f0", path: rig.files + "/first"))
        _ = try Self.completions(app, 4, timeout: .seconds(60))
        let records = try rig.transferWakes("chainer")
        #expect(records.count == 4 && records.allSatisfy { $0.from == .suspended }, "\(records)")
        let wakes = records.map(\.time)
        let gaps = zip(wakes.dropFirst(), wakes).map { $0 - $1 }
        // The next wake no sooner than the work period after the last: 2.5, 5, 10 s, counted
        // from the wake itself (a millisecond for the rounding of wall-clock seconds).
        for (gap, period) in zip(gaps, [2.5, 5.0, 10.0]) {
            #expect(gap >= period - 0.001, "gaps \(gaps)")
        }
        #expect(gaps.count == 3 && gaps[1] > gaps[0] * 1.5 && gaps[2] > gaps[1] * 1.5, "growing: \(gaps)")
    }

    @Test("a 401 resumes the suspended app; its credential lets the task complete")
    func challengeResumesTheApp() throws {
        let rig = try Rig(timeScale: 0.1)
        defer { rig.stop() }
        let digest = try rig.nginx.serve("private/f0", size: 256 << 10)
        let app = try rig.harness.launchTestApp("locked")
        try app.send(.credential(user: NginxServer.user, password: NginxServer.password))
        try app.send(.openSession(session: "vault", discretionary: nil))
        try app.expect(\.sessionOpened)
        try rig.createWhileSuspending(app, .download(session: "vault", url: "\(rig.nginx.baseURL)/private/f0", path: rig.files + "/f0"))
        let challenged = try app.expect { if case .transferChallenged = $0 { return true } else { return false } }
        if case .transferChallenged(_, _, let answered) = challenged { #expect(answered) }
        let done = try Self.completions(app, 1)
        #expect(done.values.first?.status == 200 && done.values.first?.error == nil, "\(done)")
        #expect(try sha256(rig.files + "/f0") == digest)
        // The challenge resumed it; the answered task goes on at once (seed 003), and its
        // completion is handed over in that wake or after a second resume.
        let wakes = try rig.transferWakes("locked")
        #expect(wakes.first?.from == .suspended, "\(wakes)")
        // The challenge counted against the limiter: the second wake came a work period (1 s
        // at this time scale) after the first, counted from that wake itself, however long
        // its records took to write (a millisecond for the rounding of wall-clock seconds).
        if wakes.count == 2 { #expect(wakes[1].time - wakes[0].time >= 1 - 0.001, "the challenge counted against the limiter: \(wakes)") }
        _ = try rig.nginx.requests(match: { $0.hasPrefix("GET /private/f0 401") })
        let requests = try rig.nginx.requests(match: { $0.hasPrefix("GET /private/f0 200") })
        #expect(requests.contains { $0.hasPrefix("GET /private/f0 401") } && requests.contains { $0.hasPrefix("GET /private/f0 200") }, "\(requests)")
    }

    @Test("discretionary tasks wait while the network is expensive, while on battery, and once the daily budget is spent")
    func discretionaryTasksWait() throws {
        let rig = try Rig(transfers: #"{"dailyBudget": 100000}"#)
        defer { rig.stop() }
        _ = try rig.serve(2, size: 200_000)
        let control = rig.harness.control
        try control.setNetwork(NetworkSetting(expensive: true, kind: "wifi"))
        let app = try rig.harness.launchTestApp("patient")
        try app.send(.openSession(session: "later", discretionary: true))
        try app.expect(\.sessionOpened)
        try app.send(.download(session: "later", url: "\(rig.nginx.baseURL)/f0", path: rig.files + "/f0"))
        let first = try app.expect(\.transferCreated).task
        #expect(try control.transfers(app: "patient").first?.waitReason == "expensiveNetwork")
        try control.setPower(.battery)
        try control.setNetwork(NetworkSetting(expensive: false))
        #expect(try control.transfers(app: "patient").first?.waitReason == "onBattery")
        #expect(rig.nginx.requests.isEmpty, "nothing was fetched yet: \(rig.nginx.requests)")
        // Good conditions: it runs, and its 200 000 bytes spend the 100 000-byte budget.
        try control.setPower(.externalPower)
        #expect(try Self.completions(app, 1)[first]?.status == 200)
        try app.send(.download(session: "later", url: "\(rig.nginx.baseURL)/f1", path: rig.files + "/f1"))
        _ = try app.expect(\.transferCreated)
        let waiting = try #require(try control.transfers(app: "patient").first)
        #expect(waiting.waitReason == "budgetSpent" && (waiting.waitUntil ?? 0) > Date().timeIntervalSince1970 + 3600, "\(waiting)")
        // Another network kind has its own budget.
        try control.setNetwork(NetworkSetting(kind: "ethernet"))
        #expect(try Self.completions(app, 1).values.first?.status == 200)
    }
}
