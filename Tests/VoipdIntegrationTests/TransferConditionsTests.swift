import Foundation
import Glibc
import Testing
import TestAppMessages
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// The conditions of background transfers come from the kernel as they change (issue 11):
/// voipd watches rtnetlink, and a download waiting for the network starts when a route
/// appears, with nothing polled. voipd runs in a network namespace of its own, where the
/// test can add and remove a default route without touching the machine's.
@Suite("Transfer conditions from the kernel", .serialized,
       .enabled(if: (NginxServer.shouldRun && PrivateNetwork.isAvailable) || runningUnderCI, "needs nginx; \(PrivateNetwork.skipReason)"))
struct TransferConditionsTests {
    /// A network namespace with only `lo`; nginx in it serving `f0` and `f1` (300 kB each);
    /// voipd in it with transfers on; a directory for the downloads.
    final class NamespacedRig {
        let network: PrivateNetwork
        let nginx: NginxServer
        /// Where the downloads go.
        let files: String
        let harness: DaemonHarness

        init() throws {
            network = try PrivateNetwork()
            do {
                nginx = try NginxServer(rateLimit: "50m", wrap: network.entering)
            } catch {
                network.stop()
                throw error
            }
            do {
                for name in ["f0", "f1"] { try nginx.serve(name, size: 300_000) }
                files = try makeTemporaryDirectory("voipd-transfer-files")
            } catch {
                nginx.stop()
                network.stop()
                throw error
            }
            do {
                let configuration = files + "/voipd.json"
                try #"{"transfers": {}, "suspension": "signal"}"#.write(toFile: configuration, atomically: true, encoding: .utf8)
                let network = network
                harness = try DaemonHarness(arguments: ["--config", configuration]) { $0.arguments = network.entering($0.arguments) }
            } catch {
                removeTree(files)
                nginx.stop()
                network.stop()
                throw error
            }
        }

        /// The SHA-256 of a file nginx serves.
        func digest(_ name: String) throws -> String { try sha256(nginx.www + "/" + name) }

        func stop() {
            harness.stop()
            removeTree(files)
            nginx.stop()
            network.stop()
        }
    }

    @Test("a download waits while no route leads out, starts when one appears (rtnetlink), and waits again when it goes")
    func routeStartsWaitingDownload() throws {
        let rig = try NamespacedRig()
        defer { rig.stop() }
        let (network, nginx, files, harness) = (rig.network, rig.nginx, rig.files, rig.harness)
        let control = harness.control
        #expect(try control.setPower(.auto).networkAvailable == false, "the namespace has only lo, without a default route")

        let app = try harness.launchTestApp("patient")
        try app.send(.openSession(session: "net", discretionary: nil))
        try app.expect(\.sessionOpened)
        try app.send(.download(session: "net", url: "\(nginx.baseURL)/f0", path: files + "/f0"))
        let first = try app.expect(\.transferCreated).task
        #expect(try control.transfers(app: "patient").first?.waitReason == "noNetwork")

        // A default route: RTM_NEWROUTE reaches voipd's loop, which reads the routes again.
        try Self.ip(network, ["route", "add", "default", "dev", "lo", "src", PrivateNetwork.address])
        let done = try TransferDaemonTests.completions(app, 1, timeout: .seconds(30))
        #expect(done[first]?.status == 200 && done[first]?.error == nil, "\(done)\n\(harness.log)")
        #expect(try sha256(files + "/f0") == rig.digest("f0"))
        #expect(harness.log.contains("transfers: network other, not expensive, available (from the system)"), "\(harness.log)")

        // The route goes (RTM_DELROUTE): the next download waits again.
        try Self.ip(network, ["route", "del", "default"])
        #expect(try waitForText("transfers: network other, not expensive, unavailable (from the system)", in: harness.logPath, until: MonotonicInstant.now + .seconds(20)),
                "\(harness.log)")
        try app.send(.download(session: "net", url: "\(nginx.baseURL)/f1", path: files + "/f1"))
        _ = try app.expect(\.transferCreated)
        #expect(try control.transfers(app: "patient").first { $0.url.hasSuffix("/f1") }?.waitReason == "noNetwork")
        #expect(!nginx.requests.contains { $0.hasPrefix("GET /f1 ") }, "\(nginx.requests)")
    }

    @Test("with no default route in the main table, a download runs through a default route another table holds (ip rule), and on a local network without one")
    func policyRoutingAndLocalNetwork() throws {
        let rig = try NamespacedRig()
        defer { rig.stop() }
        let (network, nginx, files, harness) = (rig.network, rig.nginx, rig.files, rig.harness)
        #expect(try harness.control.setPower(.auto).networkAvailable == false, "the namespace has only lo")
        let app = try harness.launchTestApp("routed")
        try app.send(.openSession(session: "net", discretionary: nil))
        try app.expect(\.sessionOpened)
        try app.send(.download(session: "net", url: "\(nginx.baseURL)/f0", path: files + "/f0"))
        let first = try app.expect(\.transferCreated).task
        #expect(try harness.control.transfers(app: "routed").first?.waitReason == "noNetwork")

        // Policy routing: the default route in table 100, which a rule sends every lookup to;
        // the main table stays without one.
        try Self.ip(network, ["route", "add", "default", "dev", "lo", "src", PrivateNetwork.address, "table", "100"])
        try Self.ip(network, ["rule", "add", "lookup", "100"])
        let done = try TransferDaemonTests.completions(app, 1, timeout: .seconds(30))
        #expect(done[first]?.status == 200 && done[first]?.error == nil, "\(done)\n\(harness.log)")
        #expect(try sha256(files + "/f0") == rig.digest("f0"))

        // The rule goes (RTM_DELRULE): no way out, and nothing else.
        try Self.ip(network, ["rule", "del", "lookup", "100"])
        #expect(try waitForText("transfers: network other, not expensive, unavailable (from the system)", in: harness.logPath,
                                until: MonotonicInstant.now + .seconds(20)), "\(harness.log)")

        // A local network: a link up with a carrier, an address and its subnet's route, and
        // no default route anywhere. (Its kind is the host's /sys/class/net's word, which
        // knows nothing of this namespace's links.)
        let before = harness.log.utf8.count
        // (A veth pair: its carrier is on once both ends are up.)
        try Self.ip(network, ["link", "add", "lan0", "type", "veth", "peer", "name", "lan1"])
        try Self.ip(network, ["addr", "add", "10.88.0.1/24", "dev", "lan0"])
        try Self.ip(network, ["link", "set", "lan1", "up"])
        try Self.ip(network, ["link", "set", "lan0", "up"])
        #expect(try waitForContent(of: harness.logPath, until: MonotonicInstant.now + .seconds(20)) {
            String(decoding: $0.utf8.dropFirst(before), as: UTF8.self).contains(", not expensive, available (from the system)")
        }, "\(harness.log)")
        try app.send(.download(session: "net", url: "\(nginx.baseURL)/f1", path: files + "/f1"))
        let second = try app.expect(\.transferCreated).task
        let more = try TransferDaemonTests.completions(app, 1, timeout: .seconds(30))
        #expect(more[second]?.status == 200 && more[second]?.error == nil, "\(more)\n\(harness.log)")
        #expect(try sha256(files + "/f1") == rig.digest("f1"))
    }

    @Test("a reload keeps the expensive network kinds voipd started with, as it keeps the rest of the transfer settings")
    func reloadKeepsExpensiveNetworks() throws {
        try Self.withReloadableDaemon { network, harness, reload in
            // The service comes up at the first request that needs it (its store holds no
            // task): then it follows the network.
            #expect(try harness.control.transfers().isEmpty)
            try Self.ip(network, ["route", "add", "default", "dev", "lo", "src", PrivateNetwork.address])
            try waitForText("transfers: network other, not expensive, available (from the system)", in: harness.logPath)

            // The file now says loopback's kind is expensive, and voipd reloads it.
            try reload()
            let reloadedAt = harness.log.utf8.count
            let sinceReload = { (log: String) in String(decoding: log.utf8.dropFirst(reloadedAt), as: UTF8.self) }
            // The route goes and comes back: voipd reads the network again, each time.
            try Self.ip(network, ["route", "del", "default"])
            #expect(try waitForContent(of: harness.logPath, until: MonotonicInstant.now + .seconds(20)) { sinceReload($0).contains("unavailable (from the system)") })
            try Self.ip(network, ["route", "add", "default", "dev", "lo", "src", PrivateNetwork.address])
            #expect(try waitForContent(of: harness.logPath, until: MonotonicInstant.now + .seconds(20)) { sinceReload($0).contains(", available (from the system)") },
                    "\(harness.log)")
            #expect(sinceReload(harness.log).contains("transfers: network other, not expensive, available (from the system)"), "\(harness.log)")
            #expect(try harness.control.setPower(.auto).expensive == false)
        }
    }

    @Test("a service that first comes up after a reload has the transfer settings voipd started with, as one up before it keeps them")
    func serviceUpAfterReloadHasStartSettings() throws {
        try Self.withReloadableDaemon { network, harness, reload in
            try Self.ip(network, ["route", "add", "default", "dev", "lo", "src", PrivateNetwork.address])
            // Reloaded before any transfer request: the service is not up yet.
            try reload()
            #expect(harness.log.contains("the transfer settings change only when voipd restarts"), "\(harness.log)")
            // Brought up now, it takes loopback's kind (other) for inexpensive, as voipd started.
            let seen = try harness.control.setPower(.auto)
            #expect(seen.networkAvailable && seen.networkKind == "other" && !seen.expensive, "\(seen)\n\(harness.log)")
        }
    }

    /// voipd in a network namespace of its own (only `lo`), started with `expensiveNetworks:
    /// ["cellular"]` in its configuration file; `reload` rewrites the file to say `["other"]`
    /// (loopback's kind) and has voipd reload it.
    static func withReloadableDaemon(_ body: (PrivateNetwork, DaemonHarness, _ reload: () throws -> Void) throws -> Void) throws {
        let network = try PrivateNetwork()
        defer { network.stop() }
        let files = try makeTemporaryDirectory("voipd-transfer-files")
        defer { removeTree(files) }
        let configuration = files + "/voipd.json"
        try #"{"transfers": {"expensiveNetworks": ["cellular"]}, "suspension": "signal"}"#.write(toFile: configuration, atomically: true, encoding: .utf8)
        let harness = try DaemonHarness(arguments: ["--config", configuration]) { $0.arguments = network.entering($0.arguments) }
        defer { harness.stop() }
        try body(network, harness) {
            try #"{"transfers": {"expensiveNetworks": ["other"]}, "suspension": "signal"}"#.write(toFile: configuration, atomically: true, encoding: .utf8)
            kill(harness.daemon.pid, SIGHUP)
            try waitForText("configuration reloaded from \(configuration)", in: harness.logPath)
        }
    }

    /// Runs `ip` inside the namespace, to its end.
    static func ip(_ network: PrivateNetwork, _ arguments: [String]) throws {
        let ip = try network.start(["/usr/sbin/ip"] + arguments, log: "ip.log")
        #expect(try ip.waitForExit(.seconds(10)) == .exited(0), "ip \(arguments.joined(separator: " ")): \(network.read("ip.log"))")
        network.stop(ip)
    }
}
