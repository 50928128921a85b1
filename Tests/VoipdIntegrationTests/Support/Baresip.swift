import Foundation
import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport

/// baresip 1.0 (Debian's baresip-core), unmodified, in a private network: configured in a
/// directory of its own (it writes a uuid file there), SIP on 10.77.0.1:SIPPORT (UDP, TCP and,
/// baresip's choice, TLS on SIPPORT + 1), its `ctrl_tcp` control port on 127.0.0.1:4444,
/// in-memory audio (aubridge), answering calls by itself, logging to a file of the network's
/// directory.
struct Baresip {
    static let binary = "/usr/bin/baresip"

    let process: TestProcess
    let log: String

    var pid: pid_t { process.pid }

    /// Starts it registering `user` at 127.0.0.1:5060 over `transport` ("tcp" or "udp"),
    /// and waits for the registrar's 200 OK. `dial`: a URI to call at start instead.
    init(in network: PrivateNetwork, name: String, sipPort: UInt16, user: String, transport: String, dial: String? = nil) throws {
        log = name + ".log"
        let arguments = try Self.prepare(in: network, name: name, sipPort: sipPort, user: user, transport: transport, dial: dial)
        let null = try openFile("/dev/null", flags: O_RDONLY)
        process = try network.start(arguments, log: log) { $0.standardInput = null.rawValue }
        try waitForText(dial == nil ? "200 OK" : "Call established", in: network.directory + "/" + log, timeout: .seconds(15))
    }

    /// Writes its configuration in a directory `name` of the network's; returns its command
    /// line (to run inside the network).
    static func prepare(in network: PrivateNetwork, name: String, sipPort: UInt16, user: String, transport: String,
                        dial: String? = nil, regint: Int = 600, accountParameters: String = "") throws -> [String] {
        let directory = network.directory + "/" + name
        mkdir(directory, 0o755)
        let control = dial == nil ? "module_app\t\tctrl_tcp.so\nctrl_tcp_listen\t\t127.0.0.1:4444" : ""
        try writeTextFile(SoftphoneConfiguration.baresip(address: PrivateNetwork.address, sipPort: sipPort, modules: control), to: directory + "/config")
        try writeTextFile(SoftphoneConfiguration.baresipAccount(user: user, registrar: "127.0.0.1", transport: transport, regint: regint,
                                                                parameters: accountParameters), to: directory + "/accounts")
        return [binary, "-f", directory] + (dial.map { ["-e", "/dial \($0)"] } ?? [])
    }
}

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
            _ = try harness.control.command(.background, Self.name)
            try harness.waitForState(Self.name, .suspended)
            pid = try #require(try harness.status(Self.name).pid)
        } catch {
            harness.stop()
            throw error
        }
    }
}
