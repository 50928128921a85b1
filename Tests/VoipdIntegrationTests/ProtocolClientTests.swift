import Foundation
import Glibc
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// The clients of docs/PROTOCOL.md (`Tests/protocol-clients/`), run against a real voipd: the
/// proof that a client written from the document alone works. The Python client is the
/// document's "A complete session" byte for byte; the C file holds its "C essentials".
@Suite("Protocol document clients", .serialized)
struct ProtocolClientTests {
    static let python = "/usr/bin/python3"
    static let gcc = "/usr/bin/gcc"

    /// Tests/protocol-clients, found from this file: Tests/VoipdIntegrationTests/<this file>.
    static let clients = packageDirectory + "/Tests/protocol-clients"

    @Test("the document's Python client registers its socket, is suspended, and wakes to read what its peer sent",
          .enabled(if: toolAvailableOrCI(python), "needs /usr/bin/python3 (with CI=true its absence is a failure)"))
    func pythonClient() throws {
        try #require(toolExists(Self.python), "\(Self.python) is missing")
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let peer = try harness.makePeer()
        let directory = try makeTemporaryDirectory("voipd-python-client")
        defer { removeTree(directory) }
        let output = directory + "/client.log"
        let log = try openFile(output, flags: O_WRONLY | O_CREAT | O_TRUNC)

        // Launched under voipd, so that it runs in a session of its own and can be stopped.
        let launched = try harness.control.launch([Self.python, Self.clients + "/minimal_client.py", "127.0.0.1", "\(peer.port)"],
                                                  name: "pyclient", waitForConnection: true, output: log.rawValue)
        let pid = try #require(launched.pid)
        let remote = try peer.accept()
        try waitForText("pyclient: active, VoIP socket registered", in: output)
        #expect(try harness.control.sockets("pyclient").map(\.name) == ["sip"])

        try harness.suspend("pyclient")
        #expect(processState(pid) == "T")
        try waitForText("event: didEnterBackground -> background", in: output)

        let invite = "INVITE sip:pyclient@voipd.invalid SIP/2.0"
        try remote.write(invite + "\r\n")
        try waitForText("peer: \(invite)", in: output)
        try waitForText("event: voipSocketReadable -> background sip", in: output)
        // It read the data itself and acknowledged: suspended again, nothing left unread.
        try harness.waitForState("pyclient", .suspended)
        #expect(processState(pid) == "T")
        #expect(try harness.status("pyclient").wakes == 1)
        #expect(try harness.control.sockets("pyclient").first?.bytesAvailable == 0)

        try harness.control.command(.foreground, "pyclient")
        try waitForText("event: didBecomeActive -> active", in: output)
        try harness.control.command(.terminate, "pyclient")
        try waitForText("event: willTerminate", in: output)
        let ended = try harness.waitForState("pyclient", .terminated)
        #expect(ended.reason.hasPrefix("terminated:"))
    }

    @Test("the document's C essentials compile with gcc -Wall -Wextra -Werror -std=c11 and pass their check against voipd",
          .enabled(if: toolAvailableOrCI(gcc), "needs /usr/bin/gcc (with CI=true its absence is a failure)"))
    func cEssentials() throws {
        try #require(toolExists(Self.gcc), "\(Self.gcc) is missing")
        let directory = try makeTemporaryDirectory("voipd-c-client")
        defer { removeTree(directory) }
        let binary = directory + "/c_essentials"
        let compiled = try runCommand([Self.gcc, "-Wall", "-Wextra", "-Werror", "-std=c11", "-o", binary, Self.clients + "/c_essentials.c"])
        try #require(compiled.status == 0, "gcc failed:\n\(compiled.output)")

        let harness = try DaemonHarness()
        defer { harness.stop() }
        let run = try runCommand([binary, harness.socketPath, "c-essentials"])
        #expect(run.status == 0, "c_essentials failed:\n\(run.output)")
        #expect(run.output.split(separator: "\n").last == "ok", "\(run.output)")
        // It connected twice as the same process: the second hello adopted nothing new.
        #expect(try harness.status("c-essentials").launches == 1)
        #expect(try harness.control.sockets("c-essentials").isEmpty)
    }
}
