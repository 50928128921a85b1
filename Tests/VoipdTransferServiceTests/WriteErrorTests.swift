import Foundation
import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport
import VoipdTransferService
import VoipdTransfers
import VoipdVocabulary

/// A download whose file cannot be written (the file-size limit, a full file system) fails
/// with the write's error, and takes nothing else with it.
@Suite("Write errors", .serialized, .enabled(if: NginxServer.shouldRun, "needs nginx (and setpriv as root)"))
struct WriteErrorTests {
    @Test("a download written past the agent's file-size limit (RLIMIT_FSIZE) fails with \"File too large\" (EFBIG): its partial file goes, nothing is at its destination, and the download the same agent runs beside it completes intact in its one request")
    func fileSizeLimit() throws {
        let nginx = try NginxServer(rateLimit: "1m")
        let rig = try TransferRig()
        // Below the limit, slow: under way in the agent when the limit is set and after.
        let (besideDigest, beside, besideTask) = try rig.slowDownload("beside.bin", size: 3_000_000, from: nginx, receivedAtLeast: 200_000)
        let agents = rig.service.agentProcesses
        try #require(agents.count == 1, "one agent for the app's user: \(agents)")
        // The agent's limit, as a service's LimitFSIZE= would give voipd and its agents. The
        // attempts ordered from now on run in the agent that has it.
        let limit: UInt64 = 4 << 20
        try ResourceLimit(resource: ResourceLimit.fileSize, soft: limit, hard: limit).apply(to: agents[0])

        let large = rig.downloads + "/large.bin"
        try nginx.serve("large.bin", size: 8_000_000)
        let largeTask = try rig.create(.download(nginx.baseURL + "/large.bin", to: large))
        let partial = try #require(rig.engine.tasks[largeTask]?.partialPath)
        let failed = try rig.completion(of: largeTask)
        #expect(failed.error == .file("cannot write \(partial): File too large"), "\(String(describing: failed.error)); log: \(rig.loop.logLines)")
        #expect(!fileExists(partial), "the partial file of a failed download stays")
        #expect(!fileExists(large))

        let completed = try rig.completion(of: besideTask)
        #expect(completed.error == nil && completed.response?.status == 200, "\(completed)")
        #expect(try sha256(beside) == besideDigest)
        #expect(rig.service.agentProcesses == agents, "the agent ended: \(rig.service.agentProcesses) \(rig.loop.logLines)")
        let requests = try nginx.requests(match: { $0.contains("/slow/beside.bin") }).filter { $0.contains("/slow/beside.bin") }
        #expect(requests.count == 1, "the download beside it was not interrupted: \(requests)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: rig.downloads) == ["beside.bin"])
    }

    @Test("a download that fills its file system (a 1 MiB tmpfs) fails with \"No space left on device\" (ENOSPC): its partial file goes (the file system is empty again), nothing is at its destination, and the download beside it completes intact in its one request",
          .enabled(if: geteuid() == 0 || runningUnderCI, "needs root, to mount a size-limited tmpfs"))
    func fileSystemFull() throws {
        let nginx = try NginxServer(rateLimit: "1m")
        let rig = try TransferRig()
        // The full file system: a tmpfs of 1 MiB, owned by the agent's user (the tests' own).
        let small = try makeTemporaryDirectory("voipd-small-fs")
        defer { rmdir(small) }
        _ = try valueOrErrno("mount(tmpfs, \(small))") { mount("tmpfs", small, "tmpfs", 0, "size=1m,mode=0755") }
        defer { #expect(umount2(small, Int32(MNT_DETACH)) == 0, "\(Errno.current("umount2(\(small))"))") }

        let (besideDigest, beside, besideTask) = try rig.slowDownload("beside.bin", size: 3_000_000, from: nginx, receivedAtLeast: 200_000)
        let destination = small + "/large.bin"
        try nginx.serve("large.bin", size: 3_000_000)
        let largeTask = try rig.create(.download(nginx.baseURL + "/large.bin", to: destination))
        let partial = try #require(rig.engine.tasks[largeTask]?.partialPath)
        let failed = try rig.completion(of: largeTask)
        #expect(failed.error == .file("cannot write \(partial): No space left on device"), "\(String(describing: failed.error)); log: \(rig.loop.logLines)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: small) == [], "the partial file of a failed download stays")

        let completed = try rig.completion(of: besideTask)
        #expect(completed.error == nil && completed.response?.status == 200, "\(completed)")
        #expect(try sha256(beside) == besideDigest)
        let requests = try nginx.requests(match: { $0.contains("/slow/beside.bin") }).filter { $0.contains("/slow/beside.bin") }
        #expect(requests.count == 1, "the download beside it was not interrupted: \(requests)")
    }
}
