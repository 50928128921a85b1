import Foundation
import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport

/// baresip "alice" adopted by a voipd of its own, as an adopted phone lives: its manifest in
/// the network's apps directory (`sip`, a 1 s quiet window), the voipd reading it (at
/// `timeScale`, with `daemonArguments`), baresip launched from it inside the network,
/// registered, sent to the background and suspended. The caller stops ``harness``.
struct AdoptedBaresip {
    static let name = "alice"
    let harness: DaemonHarness
    let pid: pid_t
    /// Its output, a file of the network's directory (``PrivateNetwork/read(_:)`` reads "alice.log").
    let log: String

    init(in network: PrivateNetwork, transport: String, accountParameters: String = "", timeScale: Double = 1,
         daemonArguments: [String] = []) throws {
        log = network.directory + "/\(Self.name).log"
        let command = try Baresip.prepare(in: network, name: Self.name, sipPort: 5070, user: Self.name, transport: transport,
                                          accountParameters: accountParameters)
        let apps = try network.writeManifest(app: Self.name, command: command, redirections: ">>\(log) 2>&1",
                                             keys: ["adopt": ["sip"], "quietWindowSeconds": 1])
        harness = try DaemonHarness(timeScale: timeScale, arguments: ["--apps-directory", apps] + daemonArguments)
        do {
            _ = try openFile(log, flags: O_WRONLY | O_CREAT)
            _ = try harness.control.launchManifest(Self.name)
            try waitForText("200 OK", in: log, timeout: .seconds(15))
            try harness.suspend(Self.name)
            pid = try #require(try harness.status(Self.name).pid)
        } catch {
            harness.stop()
            throw error
        }
    }
}
