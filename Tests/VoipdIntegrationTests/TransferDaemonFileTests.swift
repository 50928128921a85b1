import Foundation
import Glibc
import Testing
import TestAppMessages
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// Uploads, the resource timeout, progress and bad requests, through voipd (issue 11's list).
extension TransferDaemonTests {
    @Test("an upload of a 100 MB file with PUT through voipd arrives intact (nginx's DAV module) while the app is suspended")
    func largeUpload() throws {
        let rig = try Rig()
        defer { rig.stop() }
        let source = rig.files + "/upload.bin"
        try makeRandomFile(source, size: 100 << 20)
        let digest = try sha256(source)
        let app = try rig.harness.launchTestApp("sender")
        try app.send(.openSession(session: "out", discretionary: nil))
        try app.expect(\.sessionOpened)
        // It starts once the app is suspended: 100 MB over loopback may take less than the
        // suspension.
        try rig.createWhileSuspending(app, .upload(session: "out", url: "\(rig.nginx.baseURL)/upload/big.bin", path: source))
        let task = try #require(app.history.compactMap(\.transferCreated).last?.task)
        let done = try Self.completions(app, 1, timeout: .seconds(180))
        #expect(done[task]?.status == 201 && done[task]?.error == nil, "\(done)")
        #expect(try sha256(rig.nginx.uploads + "/big.bin") == digest)
        #expect(try rig.nginx.requests(match: { $0.hasPrefix("PUT /upload/big.bin") }).filter { $0.hasPrefix("PUT /upload/big.bin") }.map { $0.split(separator: " ").prefix(3).joined(separator: " ") }
                    == ["PUT /upload/big.bin 201"], "one PUT, created: \(rig.nginx.requests)")
        #expect(try rig.transferWakes("sender").count == 1)
    }

    @Test("timeoutIntervalForResource passing fails the task as timed out, long before the download could end; the partial file goes")
    func resourceTimeout() throws {
        // 8 MB at 256 KB/s: half a minute; the session's tasks have 2 s.
        let rig = try Rig(rateLimit: "256k")
        defer { rig.stop() }
        _ = try rig.serve(1, size: 8 << 20)
        let directory = rig.files + "/downloads"
        mkdir(directory, 0o700)
        let app = try rig.harness.launchTestApp("impatient")
        try app.send(.openSession(session: "quick", discretionary: nil, resourceTimeout: 2))
        try app.expect(\.sessionOpened)
        let started = MonotonicInstant.now
        try app.send(.download(session: "quick", url: "\(rig.nginx.baseURL)/slow/f0", path: directory + "/f0"))
        let task = try app.expect(\.transferCreated).task
        let done = try Self.completions(app, 1)
        let elapsed = MonotonicInstant.now - started
        #expect(done[task]?.error == TransferError.timedOut.description && done[task]?.status == nil, "\(done)")
        #expect(elapsed >= .milliseconds(1900) && elapsed < .seconds(20), "\(elapsed)")
        // The agent removes the partial file when told the task ended, which may be just
        // after the app is handed the completion.
        #expect(try waitForRemoval(directory + "/.f0.\(task).voipd-partial", until: MonotonicInstant.now + .seconds(10)))
        let left = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(left.isEmpty, "neither the file nor its partial file: \(left)")
        // Handled (the app acknowledged the event before its next request), it is forgotten.
        try app.send(.openSession(session: "quick", discretionary: nil, resourceTimeout: 2))
        #expect(try app.expect(\.sessionOpened).tasks.isEmpty)
    }

    @Test("a running app gets transferProgress frames: growing counts of the file's length, before its completion; voipctl transfers --follow shows the task until it is handed over; voipctl stats counts it")
    func progressFrames() throws {
        // 3 MB at 1 MB/s: 2 to 3 s, reported every half second (progressInterval).
        let rig = try Rig(rateLimit: "1m")
        defer { rig.stop() }
        let size = 3 << 20
        _ = try rig.serve(1, size: size)
        let app = try rig.harness.launchTestApp("watcher")
        try app.send(.openSession(session: "seen", discretionary: nil))
        try app.expect(\.sessionOpened)
        try app.send(.download(session: "seen", url: "\(rig.nginx.baseURL)/slow/f0", path: rig.files + "/f0"))
        let task = try app.expect(\.transferCreated).task
        let followed = rig.files + "/follow.out"
        let output = try openFile(followed, flags: O_WRONLY | O_CREAT | O_TRUNC)
        let follow = try TestProcess([Binaries.voipctl, "--socket", rig.harness.socketPath, "transfers", "--follow", "--json", "--interval", "0.2"],
                                     output: output.rawValue)
        defer { follow.stop() }
        #expect(try Self.completions(app, 1)[task]?.status == 200)
        // Handed over, the task is gone from the list.
        #expect(try waitForText(#"{"tasks":[]}"#, in: followed, until: MonotonicInstant.now + .seconds(10)), "\(ProcFS.read(followed) ?? "")")
        let lines = (ProcFS.read(followed) ?? "").split(separator: "\n")
        #expect(lines.contains { $0.contains(#""state":"running""#) && $0.contains(#""bytesPerSecond":"#) }, "\(lines)")
        let stats = try runCommand([Binaries.voipctl, "--socket", rig.harness.socketPath, "stats"]).output
        for line in ["voipd_transfer_completions_total{result=\"succeeded\"} 1", "voipd_transfer_bytes_total \(size)",
                     "voipd_transfer_attempts_total 1", "voipd_transfer_wakes_total{wake=\"resume\"} 0", "voipd_transfer_tasks{phase=\"running\"} 0"] {
            #expect(stats.contains(line + "\n"), "\(line) in:\n\(stats)")
        }
        var received: [Int64] = []
        var sawCompletion = false
        for report in app.history {
            if case .transferProgress(let session, task, let bytes, let expected, let sent) = report {
                #expect(!sawCompletion, "progress after the completion")
                #expect(session == "seen" && expected == Int64(size) && sent == 0, "\(report)")
                received.append(bytes)
            }
            if case .transferCompleted(_, task, _, _) = report { sawCompletion = true }
        }
        #expect(received.count >= 2, "\(received)")
        #expect(received == received.sorted() && received.allSatisfy { $0 <= Int64(size) }, "\(received)")
        #expect(received.contains { $0 > 0 && $0 < Int64(size) }, "a count in the middle: \(received)")
    }

    @Test("bad transfer requests of an app of another uid: another scheme is refused; a destination outside its files, a file it cannot read and root's file end the task with a file error; voipd keeps serving it",
          .enabled(if: getuid() == 0 && toolAvailableOrCI("/usr/bin/setpriv"), "needs root and setpriv (an app of another uid)"))
    func badRequests() throws {
        let rig = try Rig()
        defer { rig.stop() }
        _ = try rig.serve(1, size: 64 << 10)
        // The app runs as nobody: a directory of its own, a file of its own it cannot read,
        // and root's private file beside them.
        let nobody: uid_t = 65534
        let own = rig.files + "/nobody"
        mkdir(own, 0o700)
        chown(own, nobody, nobody)
        let unreadable = own + "/unreadable"
        try makeRandomFile(unreadable, size: 4096)
        chown(unreadable, nobody, nobody)
        chmod(unreadable, 0)
        let secret = rig.files + "/secret"
        try makeRandomFile(secret, size: 4096)
        chmod(secret, 0o600)
        let launched = try runCommand(["/usr/bin/setpriv", "--reuid=\(nobody)", "--regid=\(nobody)", "--clear-groups", Binaries.voipctl,
                                       "--socket", rig.harness.socketPath, "launch", "--name", "stranger", "--",
                                       Binaries.testApp, "--report", rig.harness.reports.path])
        try #require(launched.status == 0, "\(launched.output)")
        let app = try rig.harness.acceptApp("stranger")
        try app.send(.openSession(session: "s", discretionary: nil))
        try app.expect(\.sessionOpened)

        // Refused when asked: nothing is created.
        try app.send(.download(session: "s", url: "ftp://127.0.0.1:\(rig.nginx.port)/f0", path: own + "/ftp"))
        let refused = try app.expect { if case .error = $0 { true } else { false } }
        #expect("\(refused)".contains("only http and https URLs can be transferred, not ftp"), "\(refused)")

        // Accepted, then ended by the agent running as nobody, before anything is sent.
        try app.send(.download(session: "s", url: "\(rig.nginx.baseURL)/f0", path: rig.files + "/stolen"))
        let outside = try app.expect(\.transferCreated).task
        try app.send(.upload(session: "s", url: "\(rig.nginx.baseURL)/upload/unreadable", path: unreadable))
        let cannotRead = try app.expect(\.transferCreated).task
        try app.send(.upload(session: "s", url: "\(rig.nginx.baseURL)/upload/secret", path: secret))
        let roots = try app.expect(\.transferCreated).task
        let done = try Self.completions(app, 3)
        #expect(done[outside]?.error?.hasPrefix("file error:") == true && done[outside]?.error?.contains("belongs to uid 0") == true, "\(done)")
        #expect(done[cannotRead]?.error?.hasPrefix("file error:") == true && done[cannotRead]?.error?.contains(unreadable) == true, "\(done)")
        #expect(done[roots]?.error?.hasPrefix("file error:") == true && done[roots]?.error?.contains(secret) == true, "\(done)")
        #expect(access(rig.files + "/stolen", F_OK) != 0)
        #expect(!rig.nginx.requests.contains { $0.hasPrefix("PUT") || $0.hasPrefix("GET") }, "nothing was sent: \(rig.nginx.requests)")

        // The same app, and voipd, carry on: a download into its own directory works.
        try app.send(.download(session: "s", url: "\(rig.nginx.baseURL)/f0", path: own + "/f0"))
        let good = try app.expect(\.transferCreated).task
        #expect(try Self.completions(app, 1)[good]?.status == 200)
        var info = stat()
        #expect(stat(own + "/f0", &info) == 0 && info.st_uid == nobody, "written as the app's user")
        #expect(try rig.harness.control.status().contains { $0.name == "stranger" })
    }
}
