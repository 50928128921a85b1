import Glibc
import Testing
import VoipdProtocol
import VoipdSystem
import VoipdTestSupport

/// `voipctl hibernate` waits for its page-out: the connection waiting is not idle, and a
/// page-out that cannot finish (the app ended, was woken, or voipd was upgraded meanwhile)
/// still answers it, with the reason.
@Suite("Hibernation: a page-out that cannot finish answers its request", .serialized)
struct HibernationEndTests {
    /// A program with 256 GiB of address space it never touched: nothing to page out, but at
    /// 64 KiB a turn its page-out lasts four million turns of voipd's loop (a minute or
    /// more), as long as each test needs it to. No swap is needed: a requested page-out runs
    /// without it.
    static let wideProgram = """
        import mmap, sys, time
        reserved = mmap.mmap(-1, 256 << 30, flags=mmap.MAP_PRIVATE | 0x4000)  # MAP_NORESERVE
        open(sys.argv[1], "w").write("ready\\n")
        time.sleep(600)
        """

    /// A voipd paging out in 64 KiB slices (`limits`: its limits, as the configuration file
    /// writes them), ``wideProgram`` launched in it as "wide" and suspended, and a connection
    /// that asked it to hibernate "wide" (request 1): `body` gets them while the page-out goes on.
    static func withPageOutUnderWay(limits: String = "{}", _ body: (DaemonHarness, RawClient) throws -> Void) throws {
        let directory = try makeTemporaryDirectory("voipd-hibernate-config")
        defer { removeTree(directory) }
        try writeTextFile(#"{"hibernation": {"sliceMB": 0.0625}, "limits": \#(limits)}"#, to: directory + "/voipd.json")
        let harness = try DaemonHarness(arguments: ["--config", directory + "/voipd.json"])
        defer { harness.stop() }
        let notes = directory + "/ready"
        _ = try harness.control.launch(["/usr/bin/python3", "-c", Self.wideProgram, notes], name: "wide", speaksProtocol: false)
        try waitForText("ready", in: notes)
        try harness.suspend("wide")
        let client = try RawClient(socketPath: harness.socketPath)
        try client.send(try WireCodec().packet(.appCommand, AppCommandRequest(id: 1, verb: .hibernate, name: "wide")))
        try body(harness, client)
    }

    /// Sends `request` (number 2) behind the hibernate request on its connection, so that
    /// voipd handles it once the page-out has begun, and returns the answers to both.
    static func answers(_ client: RawClient, after type: MessageType, _ request: some Encodable) throws -> (hibernate: RawClient.Answer, second: RawClient.Answer) {
        try client.send(try WireCodec().packet(type, request))
        var answers: [Int: RawClient.Answer] = [:]
        for _ in 0..<2 {
            let answer = try client.reply(timeout: .seconds(60))
            answers[answer.id] = answer
        }
        return (try #require(answers[1], "the hibernate request is answered"), try #require(answers[2]))
    }

    @Test("an app killed while its page-out is under way: the hibernate request is answered with an error saying it ended",
          .disabled(if: underSanitizer, hibernationUnderSanitizer))
    func killedDuringPageOut() throws {
        try Self.withPageOutUnderWay { harness, client in
            // voipd's kill: a task frozen by the v1 freezer dies only once thawed.
            let (hibernate, kill) = try Self.answers(client, after: .appCommand, AppCommandRequest(id: 2, verb: .kill, name: "wide"))
            #expect(kill.ok, "\(kill.json)")
            #expect(!hibernate.ok && hibernate.code == "invalidState", "\(hibernate.json)")
            #expect(hibernate.message == "wide ended before its page-out was done", "\(hibernate.json)")
            _ = try harness.waitForState("wide", .terminated)
            #expect(try harness.status("wide").hibernation == nil)
        }
    }

    @Test("a controller waiting for a page-out is not closed as idle after limits.helloTimeout",
          .disabled(if: underSanitizer, hibernationUnderSanitizer))
    func waitingIsNotIdle() throws {
        try Self.withPageOutUnderWay(limits: #"{"helloTimeout": 1}"#) { harness, client in
            // Three times the timeout, the page-out still under way: the connection stays.
            #expect(!client.isClosedByDaemon(timeout: .seconds(3)), "closed while waiting for its reply")
            #expect(try harness.status("wide").hibernation?.state == .pagingOut, "the page-out lasted as long as the wait")
            let (hibernate, _) = try Self.answers(client, after: .appCommand, AppCommandRequest(id: 2, verb: .kill, name: "wide"))
            #expect(hibernate.message == "wide ended before its page-out was done", "\(hibernate.json)")
        }
    }

    @Test("voipd asked to stop (SIGTERM) during a page-out: the hibernate request is answered with an error saying so before its connection closes, the app is resumed with every other (nothing is left stopped), and voipd exits 0",
          .disabled(if: underSanitizer, hibernationUnderSanitizer))
    func shutdownDuringPageOut() throws {
        try Self.withPageOutUnderWay { harness, client in
            let pid = try #require(try harness.status("wide").pid)
            let (hibernate, status) = try Self.answersAfterStopping(harness, client)
            #expect(status.ok, "\(status.json)")
            #expect(!hibernate.ok && hibernate.code == "invalidState", "\(hibernate.json)")
            #expect(hibernate.message == "voipd stopped before wide's page-out was done", "\(hibernate.json)")
            #expect(try harness.daemon.waitForExit(.seconds(20)) == .exited(0))
            #expect(processState(pid) != "T", "wide was left stopped")
            #expect(harness.log.contains("wide: page-out ended: voipd stopped before wide's page-out was done"), "\(harness.log)")
        }
    }

    /// Asks for `status` (request 2) behind the hibernate request, and once it is answered
    /// (the page-out then under way) sends voipd SIGTERM; returns the answers to both.
    static func answersAfterStopping(_ harness: DaemonHarness, _ client: RawClient) throws -> (hibernate: RawClient.Answer, status: RawClient.Answer) {
        try client.send(try WireCodec().packet(.status, AppQueryRequest(id: 2, name: "wide")))
        let status = try client.reply(timeout: .seconds(60))
        #expect(status.id == 2, "\(status.json)")
        try harness.daemon.pidfd.send(SIGTERM)
        return (try client.reply(timeout: .seconds(60)), status)
    }

    @Test("an in-place upgrade during a page-out: the hibernate request is answered, to ask again; the app stays suspended",
          .disabled(if: underSanitizer, hibernationUnderSanitizer))
    func upgradeDuringPageOut() throws {
        try Self.withPageOutUnderWay { harness, client in
            let (hibernate, upgrade) = try Self.answers(client, after: .upgrade, EmptyRequest(id: 2))
            #expect(upgrade.ok, "\(upgrade.json)")
            #expect(!hibernate.ok && hibernate.message == "voipd was upgraded in place before wide's page-out was done: ask again", "\(hibernate.json)")
            let status = try harness.status("wide")
            #expect(status.state == .suspended && status.hibernation == nil, "\(status)")
        }
    }
}
