import Testing
import VoipdTransferService

/// Where voipd finds its transfer agent: beside itself in a build, in libexec when installed.
@Suite("Transfer agent launcher")
struct AgentLauncherTests {
    @Test("the agent beside the program first, else <prefix>/libexec/voipd/voipd-transfer, else the name beside it (for the error)")
    func agentExecutable() {
        let installed = "/usr/libexec/voipd/voipd-transfer"
        #expect(TransferAgentLauncher.agentExecutable(forProgram: "/usr/bin/voipd") { $0 == installed } == installed)
        #expect(TransferAgentLauncher.agentExecutable(forProgram: "/work/.build/debug/voipd") { $0 == "/work/.build/debug/voipd-transfer" }
                == "/work/.build/debug/voipd-transfer")
        #expect(TransferAgentLauncher.agentExecutable(forProgram: "/usr/bin/voipd") { _ in true } == "/usr/bin/voipd-transfer")
        #expect(TransferAgentLauncher.agentExecutable(forProgram: "/opt/voipd/bin/voipd") { _ in false } == "/opt/voipd/bin/voipd-transfer")
    }
}
