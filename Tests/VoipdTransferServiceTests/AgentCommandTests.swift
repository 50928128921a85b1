import Foundation
import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport
import VoipdTransferService
import VoipdTransfers

/// voipd's commands reach the agent and take effect while its attempts run, however fast the
/// data comes, and a command voipd cannot send fails only its own attempt.
@Suite("Agent commands during a download", .serialized)
struct AgentCommandTests {
    /// A server of 8 GiB of zeros: more than a download can take in a test's time, so it
    /// ends only by a stop.
    static func endlessDownload() throws -> FixedResponseServer {
        let total = 8 << 30
        let head = "HTTP/1.1 200 OK\r\nContent-Length: \(total)\r\nConnection: close\r\n\r\n"
        return try FixedResponseServer(response: Array(head.utf8), thenZeros: total)
    }

    @Test("a download cancelled while the body pours in from loopback stops: the agent takes the stop, its partial file goes, the body is not completed")
    func cancelDuringFastDownload() throws {
        let server = try Self.endlessDownload()
        defer { server.stop() }
        let rig = try TransferRig()
        let destination = rig.downloads + "/fast.bin"
        let id = try rig.create(.download("http://127.0.0.1:\(server.port)/fast.bin", to: destination))
        try rig.waitForProgress(of: id, atLeast: 32 << 20)
        let partial = try #require(rig.engine.tasks[id]?.partialPath)

        // The stop reaches the agent while URLSession's loop waits for the delegate to take
        // the chunks it queued: cancelling must not wait for that loop (it deadlocked).
        #expect(rig.loop.handle(.cancelTask(TransferRig.session, id)) == .done)
        let gone = try rig.run(timeout: 60) { !fileExists(partial) }
        #expect(gone, "the partial file of the cancelled download stays (\(server.zerosSent) bytes sent): \(rig.loop.logLines)")
        #expect(!fileExists(destination), "\(server.zerosSent) bytes sent")
    }

    @Test("attempts started beside a download pouring in from loopback keep the agent within its flow control's bound")
    func startBesideFastDownload() throws {
        let fast = try Self.endlessDownload()
        defer { fast.stop() }
        let small = try FixedResponseServer(response: Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8))
        defer { small.stop() }
        var configuration = TransferRig.fastConfiguration
        configuration.maximumConcurrentTransfers = Self.burst + 1
        configuration.maximumConcurrentTransfersPerHost = Self.burst
        let rig = try TransferRig(configuration: configuration)
        let id = try rig.create(.download("http://127.0.0.1:\(fast.port)/fast.bin", to: rig.downloads + "/fast.bin"))
        try rig.waitForProgress(of: id, atLeast: 32 << 20)
        let agent = try #require(rig.service.agentProcesses.first)

        // One burst of starts: the agent takes them one after the other, each making a
        // URLSession task and resuming it, which wait for URLSession's loop, while the fast
        // download keeps that loop busy. Nothing of that may lift the bound: the loop must
        // still stop reading while the delegate's queue is full.
        let others = try (0..<Self.burst).map { n in
            try rig.create(.download("http://127.0.0.1:\(small.port)/s\(n)", to: rig.downloads + "/s\(n)"))
        }
        for other in others {
            do {
                #expect(try rig.completion(of: other).error == nil)
            } catch {
                // Fewer accepted than started: the others never reached the network (in the
                // agent they waited for URLSession's queue, which the fast download held).
                throw TestFailure("\(error); the small server accepted \(small.accepted) connections of \(Self.burst)")
            }
        }
        // The delegate queue holds at most 512 chunks of 16 KiB, and as many in the batch
        // being run: with that bound kept, the agent stays far below 256 MiB resident.
        let peak = (ProcFS.read("/proc/\(agent)/status") ?? "").split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
            .flatMap { Int($0.split(whereSeparator: { $0 == " " || $0 == "\t" })[1]) } ?? 0
        // Under a sanitizer resident memory says nothing (memoryUnderSanitizer): there only
        // the completions above are checked.
        if !underSanitizer {
            #expect(peak > 0 && peak < 256 << 10, "the agent's peak resident memory: \(peak) KiB (\(fast.zerosSent) bytes sent)")
        }
        _ = rig.loop.handle(.cancelTask(TransferRig.session, id))
    }

    /// The starts of ``startBesideFastDownload()``, all at once.
    static let burst = 48

    @Test("a request within its bounds that JSON's escapes make too large for one command fails with that error; its agent is not ended for it")
    func oversizedCommand() throws {
        // 64 headers of 3 + 505 bytes and their separators: exactly the 32 KiB an app may
        // send, and 64 KiB of escaped backslashes in the command that would start it.
        let headers = HTTPHeaders((0..<64).map { HTTPHeader(String(format: "h%02d", $0), String(repeating: "\\", count: 505)) })
        let rig = try TransferRig()
        let id = try rig.create(.download("http://127.0.0.1:9/large-request", to: rig.downloads + "/large-request", headers: headers))

        let completion = try rig.completion(of: id, timeout: 30)
        guard case .network(let failure)? = completion.error else {
            Issue.record("not a network error: \(String(describing: completion.error))")
            return
        }
        #expect(failure.code == TransferService.dataLengthExceedsMaximum && !failure.isTransient, "\(failure)")
        #expect(failure.message.contains("too large for the transfer agent"), "\(failure.message)")
        #expect(!rig.loop.logLines.contains { $0.contains("is ended") }, "\(rig.loop.logLines)")
    }
}
