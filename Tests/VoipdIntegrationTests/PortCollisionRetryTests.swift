import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// A program that binds its port itself (baresip here, as voip-demo runs it) loses the race
/// for a port found free when another process binds it first: `startOnFreePort` sees it end
/// with EADDRINUSE and starts it again on another port. The collision is forced: the first
/// port the picker returns is held by the test.
@Suite("Port collision retry", .serialized)
struct PortCollisionRetryTests {
    /// baresip on 127.0.0.1:`port` (its configuration in `directory`, no account), its output
    /// in `directory`/log: bound once it says it is ready; a collision if it ends first with
    /// EADDRINUSE.
    static func startBaresip(on port: UInt16, in directory: String, started: inout [TestProcess]) throws -> PortBindOutcome<TestProcess> {
        let home = directory + "/\(port)"
        mkdir(home, 0o755)
        try writeTextFile(SoftphoneConfiguration.baresip(address: "127.0.0.1", sipPort: port), to: home + "/config")
        try writeTextFile("", to: home + "/accounts")
        let log = home + "/log"
        let output = try openFile(log, flags: O_WRONLY | O_CREAT | O_APPEND)
        let process = try TestProcess([Baresip.binary, "-f", home], output: output.rawValue)
        started.append(process)
        let deadline = MonotonicInstant.now + .seconds(15)
        // It says it is ready after binding its SIP port, or ends at once when it cannot bind it.
        let said = try waitForContent(of: log, until: deadline) { $0.contains("baresip is ready.") || reportsAddressInUse(exitStatus: nil, log: $0) }
        let text = ProcFS.read(log) ?? ""
        if said && text.contains("baresip is ready.") { return .bound(process) }
        let status = try process.waitForExit(.seconds(10))
        guard case .exited(let code) = status, reportsAddressInUse(exitStatus: code, log: text) else {
            throw TestFailure("baresip on port \(port) neither became ready nor failed to bind (\(status)):\n\(text)")
        }
        return .addressInUse("exit status \(code)")
    }

    @Test("baresip given a port another process took meanwhile exits 98; startOnFreePort starts it again on a new port, which it binds",
          .enabled(if: toolAvailableOrCI(Baresip.binary), "needs baresip-core (with CI=true its absence is a failure)"))
    func retriesOnANewPort() throws {
        let directory = try makeTemporaryDirectory("port-collision")
        defer { removeTree(directory) }
        // The other process: it holds UDP on the port the first probe returns (baresip binds
        // UDP first, and gives up on the first failure).
        let heldUDP = try Socket.bindUDP()
        let taken = try Socket.localPort(heldUDP)
        var picked: [UInt16] = []
        var started: [TestProcess] = []
        defer { for process in started { process.terminate() } }
        let baresip = try startOnFreePort("baresip", pickPort: {
            let port = picked.isEmpty ? taken : try freeSIPPortPair()
            picked.append(port)
            return port
        }) { port in try Self.startBaresip(on: port, in: directory, started: &started) }
        // A free port may be taken by someone else too, so more than two tries can happen.
        #expect(picked.count >= 2 && picked.first == taken && !picked.dropFirst().contains(taken), "ports tried: \(picked)")
        #expect(started.count == picked.count && started.first?.status == .exited(EADDRINUSE), "the first baresip exited with EADDRINUSE")
        #expect(ProcFS.read(directory + "/\(taken)/log")?.contains(String(cString: strerror(EADDRINUSE))) == true)
        #expect(baresip.status == nil && ProcFS.state(of: baresip.pid) != nil, "the second one runs")
        _ = heldUDP
    }

    @Test("when every port tried is taken, startOnFreePort gives up after its attempts with an error naming each port and what the program said",
          .enabled(if: toolAvailableOrCI(Baresip.binary), "needs baresip-core (with CI=true its absence is a failure)"))
    func givesUpClearly() throws {
        let directory = try makeTemporaryDirectory("port-collision")
        defer { removeTree(directory) }
        let heldUDP = try Socket.bindUDP()
        let taken = try Socket.localPort(heldUDP)
        var started: [TestProcess] = []
        defer { for process in started { process.terminate() } }
        let error = #expect(throws: PortCollisions.self) {
            try startOnFreePort("baresip", attempts: 3, pickPort: { taken }) { port in
                try Self.startBaresip(on: port, in: directory, started: &started)
            }
        }
        #expect(started.count == 3)
        #expect(error?.attempts.map(\.port) == [taken, taken, taken])
        #expect(error?.description == "baresip could not bind its port 3 times in a row (another process took each one first): "
                + Array(repeating: "\(taken): exit status \(EADDRINUSE)", count: 3).joined(separator: "; "))
        _ = heldUDP
    }

    /// A picker whose first port is `taken` (held by the test), then free ones; every port
    /// it returned in `picked`.
    static func takenFirst(_ taken: UInt16, _ picked: inout [UInt16]) throws -> UInt16 {
        let port = picked.isEmpty ? taken : try freeLoopbackPort()
        picked.append(port)
        return port
    }

    @Test("Kamailio given a port another process took meanwhile ends at once; KamailioServer starts it again on a new port rather than waiting out its readiness deadline",
          .enabled(if: KamailioServer.shouldRun, Comment(rawValue: KamailioServer.skipReason)))
    func kamailioRetriesOnANewPort() throws {
        // The other process: a TCP listener on the port the first pick returns.
        let held = try Socket.listenTCP()
        let taken = try Socket.localPort(held)
        var picked: [UInt16] = []
        let kamailio = try KamailioServer(pickPort: { try Self.takenFirst(taken, &picked) })
        defer { kamailio.stop() }
        // A deadline that passed would have been an error, not a retry.
        #expect(picked.count >= 2 && picked.first == taken && !picked.dropFirst().contains(taken), "ports tried: \(picked)")
        #expect(kamailio.port == picked.last)
        #expect(kamailio.log.contains(String(cString: strerror(EADDRINUSE))), "\(kamailio.log)")
        _ = held
    }

    @Test("nginx given a port another process took meanwhile ends after its own tries; NginxServer starts it again on a new port. Restarted after another process took its port, it says so",
          .enabled(if: NginxServer.shouldRun, "needs nginx (and setpriv as root); with CI=true its absence is a failure"))
    func nginxRetriesOnANewPort() throws {
        let held = try Socket.listenTCP()
        let taken = try Socket.localPort(held)
        var picked: [UInt16] = []
        let nginx = try NginxServer(pickPort: { try Self.takenFirst(taken, &picked) })
        #expect(picked.count >= 2 && picked.first == taken && !picked.dropFirst().contains(taken), "ports tried: \(picked)")
        #expect(nginx.port == picked.last)
        _ = held
        // Bound: connecting to its port reaches it.
        _ = try Socket.connectTCP(host: "127.0.0.1", port: nginx.port)
        // A restart keeps its address, so it cannot move to another port: a clear error.
        nginx.stop()
        let thief = try Socket.listenTCP(port: nginx.port)
        let error = #expect(throws: TestFailure.self) { try nginx.start() }
        #expect(error?.description.contains("could not bind its port \(nginx.port) again") == true, "\(String(describing: error))")
        _ = thief
    }
}
