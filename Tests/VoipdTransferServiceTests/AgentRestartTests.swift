import Foundation
import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport
import VoipdTransferService
import VoipdTransfers

/// Downloads surviving the agent's death and voipd's restart, from the store and the partial
/// file.
@Suite("Agent and service restarts", .serialized, .enabled(if: NginxServer.shouldRun, "needs nginx (and setpriv as root)"))
struct AgentRestartTests {
    @Test("an agent killed in the middle of a download is started again and resumes with a Range request")
    func agentKilled() throws {
        let nginx = try NginxServer(rateLimit: "8m")
        let rig = try TransferRig()
        let (digest, destination, id) = try rig.slowDownload("a.bin", size: 32_000_000, from: nginx, receivedAtLeast: 6_000_000)
        let agents = rig.service.agentProcesses
        #expect(agents.count == 1)
        kill(agents[0], SIGKILL)
        let completion = try rig.completion(of: id)
        #expect(completion.error == nil)
        #expect(try sha256(destination) == digest)
        #expect(rig.service.agentProcesses.count == 1 && rig.service.agentProcesses != agents, "a new agent")
        #expect(try nginx.requests(match: { $0.contains("/slow/a.bin 206") }).contains { $0.contains("/slow/a.bin 206") && $0.contains("range=\"bytes=") },
                "\(nginx.requests)")
    }

    @Test("voipd and its agent ending at once: a new service resumes the download from the store")
    func serviceRestarted() throws {
        let nginx = try NginxServer(rateLimit: "8m")
        let rig = try TransferRig()
        let (digest, destination, id) = try rig.slowDownload("b.bin", size: 32_000_000, from: nginx, receivedAtLeast: 6_000_000)
        try rig.restartService()
        #expect(rig.engine.tasks[id] != nil, "the task came back from the store")
        #expect(rig.engine.tasks[id]?.resumeValidator != nil)
        // The app runs again and says so.
        rig.loop.handle(.appPresence(app: TransferRig.app, .foreground))
        let completion = try rig.completion(of: id)
        #expect(completion.error == nil)
        #expect(try sha256(destination) == digest)
        #expect(try nginx.requests(match: { $0.contains("/slow/b.bin 206") }).contains { $0.contains("/slow/b.bin 206") && $0.contains("range=\"bytes=") },
                "\(nginx.requests)")
    }

    @Test("a completion the app had not handled when voipd ended is delivered by the next one")
    func undeliveredAcrossRestart() throws {
        let nginx = try NginxServer()
        try nginx.serve("c.bin", size: 1000)
        let rig = try TransferRig()
        rig.acknowledges = false
        let id = try rig.create(.download(nginx.baseURL + "/c.bin", to: rig.downloads + "/c.bin"))
        _ = try rig.completion(of: id)
        try rig.restartService()
        rig.loop.handle(.appPresence(app: TransferRig.app, .background))
        let again = try rig.completion(of: id, timeout: 10)
        #expect(again.error == nil)
    }
}
