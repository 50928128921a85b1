import Foundation
import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport
import VoipdTransferService
import VoipdTransfers
import VoipdVocabulary

/// A download's partial file belongs to one task and one agent at a time: it goes with its
/// cancelled task, and an agent never writes one another agent still holds.
@Suite("Partial files", .serialized, .enabled(if: NginxServer.shouldRun, "needs nginx (and setpriv as root)"))
struct PartialFileTests {
    @Test("a partial file another agent still holds is left alone; the download waits for it and completes intact")
    func lockedByAnotherAgent() throws {
        let nginx = try NginxServer()
        let digest = try nginx.serve("locked.bin", size: 3_000_000)
        let rig = try TransferRig()
        // The task waits (no network) until the file is in the hands of "the old agent".
        rig.loop.handle(.network(NetworkStatus(isAvailable: false)))
        let destination = rig.downloads + "/locked.bin"
        let id = try rig.create(.download(nginx.baseURL + "/locked.bin", to: destination))
        let partial = try #require(rig.engine.tasks[id]?.partialPath)
        // The agent of a voipd that has just ended, still writing its last bytes.
        let old = try openFile(partial, flags: O_WRONLY | O_CREAT, mode: 0o600)
        _ = try valueOrErrno("flock") { flock(old.rawValue, LOCK_EX) }
        let oldBytes = [UInt8](repeating: 0x5a, count: 4096)
        try old.writeAll(oldBytes)

        rig.loop.handle(.network(NetworkStatus(isAvailable: true)))
        let refused = try rig.run(timeout: 30) { rig.engine.tasks[id]?.lastFailure?.contains("in use by another transfer agent") == true }
        #expect(refused, "the new agent's attempt must wait: \(String(describing: rig.engine.tasks[id]))")
        #expect(fileSize(partial) == Int64(oldBytes.count), "the new agent wrote nothing into a file it does not hold")
        #expect(fileSize(destination) == nil)

        // The old agent ends; its lock goes with its descriptor.
        try old.close()
        let completion = try rig.completion(of: id)
        #expect(completion.error == nil)
        #expect(try sha256(destination) == digest)
        #expect(!fileExists(partial))
    }

    @Test("cancelling a download as its agent dies still removes its partial file")
    func cancelledAsAgentDies() throws {
        let nginx = try NginxServer(rateLimit: "8m")
        let rig = try TransferRig()
        let (_, destination, id) = try rig.slowDownload("cancelled.bin", size: 32_000_000, from: nginx, receivedAtLeast: 2_000_000)
        let partial = try #require(rig.engine.tasks[id]?.partialPath)
        #expect(fileExists(partial))
        let agents = rig.service.agentProcesses
        try #require(agents.count == 1)
        // The agent dies (its descriptors closed: its pidfd is readable) and the app cancels
        // before voipd's loop has seen it: the stop reaches no one.
        let agent = try PidFd(pid: agents[0])
        try agent.send(SIGKILL)
        #expect(try waitReadable(agent.descriptor.rawValue, until: .now + .seconds(30)), "the agent did not die")
        #expect(rig.loop.handle(.cancelTask(TransferRig.session, id)) == .done)

        let gone = try rig.run(timeout: 30) { !fileExists(partial) }
        #expect(gone, "the partial file of a cancelled task stays: \(rig.loop.logLines)")
        #expect(fileSize(destination) == nil)
        #expect(rig.completionIfDelivered(id)?.error == .cancelled)
    }
}
