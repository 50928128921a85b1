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
}
