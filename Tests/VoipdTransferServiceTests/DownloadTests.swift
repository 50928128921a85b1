import Foundation
import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport
import VoipdTransferService
import VoipdTransfers
import VoipdVocabulary

/// Downloads through the agent from a real nginx.
@Suite("Downloads with nginx", .serialized, .enabled(if: NginxServer.shouldRun, "needs nginx (and setpriv as root)"))
struct DownloadTests {
    @Test("five downloads at once: each completes with 200 and its SHA-256; no partial file is left")
    func five() throws {
        let nginx = try NginxServer()
        let rig = try TransferRig()
        let sizes = [0, 1, 100_000, 3_000_000, 20_000_000]
        var expected: [TransferTaskID: (path: String, digest: String, size: Int)] = [:]
        for (index, size) in sizes.enumerated() {
            let digest = try nginx.serve("file\(index).bin", size: size)
            let destination = rig.downloads + "/file\(index).bin"
            let id = try rig.create(.download(nginx.baseURL + "/file\(index).bin", to: destination))
            expected[id] = (destination, digest, size)
        }
        for (id, file) in expected {
            let completion = try rig.completion(of: id)
            #expect(completion.error == nil)
            #expect(completion.response?.status == 200)
            #expect(completion.progress.bytesReceived == Int64(file.size))
            #expect(try sha256(file.path) == file.digest, "\(file.path)")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: rig.downloads).sorted()
        #expect(left == (0..<5).map { "file\($0).bin" })
        #expect(rig.engine.tasks.isEmpty, "handled completions are forgotten")
        let records = try FileManager.default.contentsOfDirectory(atPath: rig.storeDirectory + "/tasks")
        #expect(records == [], "\(records) \(records.map { ProcFS.read(rig.storeDirectory + "/tasks/" + $0) ?? "" })")
    }

    @Test("nginx stopped in the middle of a download and started again: it resumes with a Range request, and the SHA-256 matches")
    func serverRestart() throws {
        let nginx = try NginxServer(rateLimit: "8m")
        let rig = try TransferRig()
        let (digest, destination, id) = try rig.slowDownload("large.bin", size: 48_000_000, from: nginx, receivedAtLeast: 8_000_000)
        nginx.stop()
        // The agent reports the lost connection; the task waits to try again, and fails to
        // connect while nginx is down.
        #expect(try rig.run(timeout: 30) { rig.engine.tasks[id]?.failuresInARow ?? 0 >= 2 })
        let kept = fileSize(TransferTask.partialPath(destination: destination, task: id)) ?? 0
        #expect(kept >= 8_000_000, "the partial file is kept")
        try nginx.start()
        let completion = try rig.completion(of: id, timeout: 60)
        #expect(completion.error == nil)
        #expect(completion.response?.status == 206)
        #expect(try sha256(destination) == digest)
        let ranged = try nginx.requests(match: { $0.contains("/slow/large.bin 206") }).filter { $0.contains("/slow/large.bin 206") }
        #expect(ranged.count == 1, "\(nginx.requests)")
        #expect(ranged.first?.contains("range=\"bytes=\(kept)-\"") == true, "resumed from the \(kept) bytes kept: \(ranged)")
        #expect(ranged.first?.contains("if_range=\"\\x22") == true, "validated by the entity tag: \(ranged)")
    }

    @Test("a download the server changed in between starts again (If-Range does not match)")
    func changedResource() throws {
        let nginx = try NginxServer(rateLimit: "8m")
        let rig = try TransferRig()
        let (_, destination, id) = try rig.slowDownload("moving.bin", size: 24_000_000, from: nginx, receivedAtLeast: 4_000_000)
        nginx.stop()
        #expect(try rig.run(timeout: 30) { rig.engine.tasks[id]?.runningAttempt == nil })
        let digest = try nginx.serve("moving.bin", size: 16_000_000)
        try nginx.start()
        let completion = try rig.completion(of: id, timeout: 60)
        #expect(completion.error == nil)
        #expect(completion.response?.status == 200, "the whole new version")
        #expect(try sha256(destination) == digest)
        #expect(try nginx.requests(match: { $0.contains("/slow/moving.bin 200") }).contains { $0.contains("/slow/moving.bin 200") && $0.contains("range=\"bytes=") })
    }

    @Test("a 404 ends the task with an HTTP error and leaves no file")
    func notFound() throws {
        let nginx = try NginxServer()
        let rig = try TransferRig()
        let destination = rig.downloads + "/missing.bin"
        let id = try rig.create(.download(nginx.baseURL + "/missing.bin", to: destination))
        let completion = try rig.completion(of: id)
        #expect(completion.error == .http(status: 404))
        #expect(completion.response?.status == 404)
        #expect(try FileManager.default.contentsOfDirectory(atPath: rig.downloads).isEmpty)
    }

    @Test("timeoutIntervalForResource passing ends the task as timed out; the partial file goes")
    func resourceTimeout() throws {
        let nginx = try NginxServer(rateLimit: "1m")
        try nginx.serve("slow.bin", size: 16_000_000)
        let rig = try TransferRig(sessionOptions: TransferOptions(timeoutIntervalForResource: 1.5))
        let destination = rig.downloads + "/slow.bin"
        let started = MonotonicInstant.now
        let id = try rig.create(.download(nginx.baseURL + "/slow/slow.bin", to: destination))
        let completion = try rig.completion(of: id, timeout: 30)
        let elapsed = (MonotonicInstant.now - started).seconds
        #expect(completion.error == .timedOut)
        #expect(completion.progress.bytesReceived > 0)
        #expect(elapsed >= 1.5)
        let partial = TransferTask.partialPath(destination: destination, task: id)
        #expect(try rig.run(timeout: 10) { !fileExists(partial) }, "the agent removes the partial file")
        #expect(!fileExists(destination))
    }

    /// An HTTP server that answers every request with the head of a 100 000-byte body and its
    /// first 1000 bytes, then says nothing more (the connection stays open); each request's
    /// time (CLOCK_MONOTONIC) and Range header go to the log given as its argument, a line
    /// each. Its listening socket is its 3.
    static let silentServer = #"""
    import socket, sys, time
    listener = socket.socket(fileno=3)
    log = open(sys.argv[1], "a", buffering=1)
    held = []
    while True:
        connection, _ = listener.accept()
        request = b""
        while b"\r\n\r\n" not in request:
            chunk = connection.recv(4096)
            if not chunk:
                break
            request += chunk
        lines = request.decode("latin-1").split("\r\n")
        log.write("%.6f request %s\n" % (time.monotonic(), next((l for l in lines if l.lower().startswith("range:")), "no range")))
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nAccept-Ranges: bytes\r\nETag: \"silent\"\r\n\r\n" + b"x" * 1000)
        held.append(connection)
    """#

    @Test("a server that goes silent mid-body fails the attempt after timeoutIntervalForRequest (under a second too); the retry asks for the rest",
          .enabled(if: toolAvailableOrCI("/usr/bin/python3"), "needs python3"))
    func requestTimeout() throws {
        let rig = try TransferRig(sessionOptions: TransferOptions(timeoutIntervalForRequest: 0.5))
        let listener = try Socket.listenTCP()
        let port = try Socket.localPort(listener)
        let log = rig.directory + "/requests.log"
        let server = try TestProcess(["/usr/bin/python3", "-c", Self.silentServer, log], extraDescriptors: [listener.rawValue])
        defer { server.stop() }
        let id = try rig.create(.download("http://127.0.0.1:\(port)/silent.bin", to: rig.downloads + "/silent.bin"))
        #expect(try rig.run(timeout: 30) { rig.engine.tasks[id]?.failuresInARow ?? 0 >= 1 })
        let failure = rig.engine.tasks[id]?.lastFailure ?? ""
        #expect(failure.contains("timeoutIntervalForRequest"), "\(failure)")
        // The retry, after the back-off, asks for the rest, and times out in turn: a third
        // attempt starts (the server logs a request before it answers it).
        #expect(try rig.run(timeout: 30) { rig.engine.tasks[id]?.attemptsStarted ?? 0 >= 3 })
        #expect(rig.loop.handle(.cancelTask(TransferRig.session, id)) == .done)
        let requests = (ProcFS.read(log) ?? "").split(separator: "\n")
        #expect(requests.count >= 2 && requests[1].hasSuffix(" request Range: bytes=1000-"), "\(requests)")
        let times = requests.compactMap { $0.split(separator: " ").first.flatMap { Double($0) } }
        // Silent from the first response on: the retry comes no sooner than the timeout.
        // (With URLSession's own timeout, 0.5 s or 2 s, no attempt ever ended.)
        #expect(times.count >= 2 && times[1] - times[0] >= 0.5, "requests at \(times)")
    }

    @Test("a 401 challenge reaches the app; answered with the credential the task completes; a wrong one is challenged again")
    func challenge() throws {
        let nginx = try NginxServer()
        let digest = try nginx.serve("private/secret.bin", size: 500_000)
        let rig = try TransferRig()
        let destination = rig.downloads + "/secret.bin"
        let id = try rig.create(.download(nginx.baseURL + "/private/secret.bin", to: destination))
        let first = try rig.challenge(of: id)
        #expect(first.scheme == "Basic" && first.realm == "transfers" && first.previousFailureCount == 0)
        #expect(first.response.status == 401)
        #expect(rig.loop.handle(.answerChallenge(TransferRig.session, id, .useCredential(user: NginxServer.user, password: "wrong"))) == .done)
        #expect(try rig.run(timeout: 30) { rig.engine.tasks[id].map { if case .challenged(let c, _) = $0.phase { c.previousFailureCount == 1 } else { false } } ?? false })
        #expect(rig.loop.handle(.answerChallenge(TransferRig.session, id, .useCredential(user: NginxServer.user, password: NginxServer.password))) == .done)
        let completion = try rig.completion(of: id)
        #expect(completion.error == nil)
        #expect(try sha256(destination) == digest)
        #expect(try nginx.requests(once: 2, match: { $0.contains("/private/secret.bin 401") }).filter { $0.contains("/private/secret.bin 401") }.count == 2)
    }

    @Test("a destination in a directory the agent's user does not own is a file error", .enabled(if: getuid() == 0, "needs root"))
    func foreignDirectory() throws {
        let nginx = try NginxServer()
        try nginx.serve("a.bin", size: 10)
        let rig = try TransferRig()
        let foreign = rig.directory + "/foreign"
        mkdir(foreign, 0o777)
        chown(foreign, 65534, 65534)
        let id = try rig.create(.download(nginx.baseURL + "/a.bin", to: foreign + "/a.bin"))
        let completion = try rig.completion(of: id)
        guard case .file(let message)? = completion.error else {
            Issue.record("not a file error: \(String(describing: completion.error))")
            return
        }
        #expect(message.contains("belongs to uid 65534"))
        #expect(!fileExists(foreign + "/a.bin"))
    }

    @Test("progress reaches a running app at a bounded rate")
    func progressRate() throws {
        let nginx = try NginxServer(rateLimit: "4m")
        try nginx.serve("p.bin", size: 8_000_000)
        let rig = try TransferRig()
        let started = MonotonicInstant.now
        let id = try rig.create(.download(nginx.baseURL + "/slow/p.bin", to: rig.downloads + "/p.bin"))
        _ = try rig.completion(of: id)
        let seconds = (MonotonicInstant.now - started).seconds
        let events = rig.loop.progressEvents.filter { $0.event.task == id }
        let received = events.compactMap { if case .progress(let p) = $0.event.kind { p.bytesReceived } else { nil } }
        #expect(received.count >= 3, "\(received) in \(seconds) s")
        #expect(Double(received.count) <= seconds / rig.configuration.progressInterval + 2, "\(received.count) reports in \(seconds) s")
        #expect(received == received.sorted(), "bytes only grow")
        #expect(events.allSatisfy { if case .progress(let p) = $0.event.kind { p.bytesExpectedToReceive == 8_000_000 } else { false } })
    }

    @Test("a download faster than the agent can write does not grow the agent's memory (flow control on URLSession's loop)",
          .disabled(if: underSanitizer, memoryUnderSanitizer))
    func boundedMemory() throws {
        let nginx = try NginxServer()
        let digest = try nginx.serve("big.bin", size: 400_000_000)
        let rig = try TransferRig()
        let destination = rig.downloads + "/big.bin"
        let id = try rig.create(.download(nginx.baseURL + "/big.bin", to: destination))
        #expect(try rig.completion(of: id, timeout: 300).error == nil)
        #expect(try sha256(destination) == digest)
        let agent = try #require(rig.service.agentProcesses.first)
        let peak = try #require(peakResidentMiB(agent))
        // The queue to the delegate holds at most about 16 MiB; without the bound, the
        // agent held most of the file (hundreds of MiB).
        #expect(peak < 120, "the agent's peak resident size was \(peak) MiB")
    }
}

/// VmHWM of a process, in MiB.
func peakResidentMiB(_ pid: pid_t) -> Int? {
    guard let status = ProcFS.read("/proc/\(pid)/status"),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kib = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
    return kib / 1024
}
