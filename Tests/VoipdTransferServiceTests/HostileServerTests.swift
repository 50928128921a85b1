import Foundation
import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport
import VoipdTransferService
import VoipdTransfers

/// A server is as hostile as a client: what it answers must not end the agent, which carries
/// the transfers of every app of the user.
@Suite("A hostile HTTP server", .serialized)
struct HostileServerTests {
    @Test("a response whose headers double in JSON (quotes, slashes) still reaches voipd: the agent keeps its frame, the download completes")
    func escapedHeaders() throws {
        // 100 headers of 3 + 324 bytes: within the agent's 32 KiB of headers as bytes, but each
        // quote is two bytes in JSON, and the report would no longer fit in one 64 KiB frame.
        let headers = (0..<100).map { String(format: "q%02d: ", $0) + String(repeating: "\"", count: 324) + "\r\n" }.joined()
        let body = "hello, hostile world\n"
        let response = "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n" + headers + "\r\n" + body
        let server = try FixedResponseServer(response: Array(response.utf8))
        defer { server.stop() }
        let rig = try TransferRig()
        let destination = rig.downloads + "/hostile.txt"
        let id = try rig.create(.download("http://127.0.0.1:\(server.port)/hostile.txt", to: destination))

        let completion = try rig.completion(of: id, timeout: 30)
        #expect(completion.error == nil)
        #expect(completion.response?.status == 200)
        let kept = completion.response?.headers.lines.filter { $0.name.lowercased().hasPrefix("q") } ?? []
        #expect(!kept.isEmpty && kept.count < 100, "as many headers as fit: \(kept.count)")
        #expect(ProcFS.read(destination) == body)
        #expect(!rig.loop.logLines.contains { $0.contains("agent") && $0.contains("ended") }, "\(rig.loop.logLines)")
    }
}
