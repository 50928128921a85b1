import Glibc
import VoipdSystem

/// baresip 1.0 (Debian's baresip-core), unmodified, in a private network: configured in a
/// directory of its own (it writes a uuid file there), SIP on 10.77.0.1:SIPPORT (UDP, TCP and,
/// baresip's choice, TLS on SIPPORT + 1), with `control` its `ctrl_tcp` control port on
/// 127.0.0.1:4444, in-memory audio (aubridge), answering calls by itself, logging to a file
/// of the network's directory.
public struct Baresip {
    public static let binary = "/usr/bin/baresip"

    public let process: TestProcess
    public let log: String

    public var pid: pid_t { process.pid }

    /// Starts it registering `user` at 127.0.0.1:5060 over `transport` ("tcp" or "udp"),
    /// and waits for the registrar's 200 OK. `dial`: a URI to call at start instead.
    public init(in network: PrivateNetwork, name: String, sipPort: UInt16, user: String, transport: String, dial: String? = nil,
                control: Bool = true) throws {
        log = name + ".log"
        let arguments = try Self.prepare(in: network, name: name, sipPort: sipPort, user: user, transport: transport, dial: dial,
                                         control: control)
        process = try network.start(arguments, log: log)
        try network.waitForLog(log, containing: dial == nil ? "200 OK" : "Call established", timeout: .seconds(15))
    }

    /// Writes its configuration in a directory `name` of the network's; returns its command
    /// line (to run inside the network). A caller (`dial`) has no control port.
    public static func prepare(in network: PrivateNetwork, name: String, sipPort: UInt16, user: String, transport: String,
                               dial: String? = nil, control: Bool = true, regint: Int = 600, accountParameters: String = "") throws -> [String] {
        let directory = network.path(name)
        mkdir(directory, 0o755)
        let modules = control && dial == nil ? "module_app\t\tctrl_tcp.so\nctrl_tcp_listen\t\t127.0.0.1:4444" : ""
        try writeTextFile(SoftphoneConfiguration.baresip(address: PrivateNetwork.address, sipPort: sipPort, modules: modules),
                          to: directory + "/config")
        try writeTextFile(SoftphoneConfiguration.baresipAccount(user: user, registrar: "127.0.0.1", transport: transport, regint: regint,
                                                                parameters: accountParameters), to: directory + "/accounts")
        return [binary, "-f", directory] + (dial.map { ["-e", "/dial \($0)"] } ?? [])
    }
}

/// linphonec (Debian's linphone-cli, liblinphone 5.1), unmodified, in a private network with
/// a default route (without one liblinphone takes the network for down and opens no SIP
/// socket): a home of its own (it keeps a database under ~/.local/share/linphone), SIP over
/// UDP on its port, registering at 127.0.0.1:REGISTRARPORT, answering calls by itself (-a),
/// logging to a file of the network's directory. Its standard input is a pipe held here:
/// linphonec reads commands there.
public final class Linphonec {
    public static let binary = "/usr/bin/linphonec"
    /// Its log (`-l`), in the network's directory.
    public static let log = "linphonec.log"

    public let process: TestProcess
    private var input: DescriptorBox?

    public var pid: pid_t { process.pid }

    public init(in network: PrivateNetwork, sipPort: UInt16, registrarPort: UInt16, user: String) throws {
        let (arguments, home) = try Self.prepare(in: network, sipPort: sipPort, registrarPort: registrarPort, user: user)
        let pipe = try makePipe()
        let readEnd = pipe.first
        let writeEnd = pipe.second
        process = try network.start(arguments, log: "linphonec.out",
                                    environment: currentEnvironment().filter { !$0.hasPrefix("HOME=") } + ["HOME=\(home)"]) {
            $0.standardInput = readEnd.rawValue
        }
        input = DescriptorBox(writeEnd)
        try network.waitForLog(Self.log, containing: "LinphoneRegistrationOk", timeout: .seconds(30))
    }

    /// Writes its configuration in a home of the network's directory and creates its log
    /// (so that a wait can watch it before linphonec opens it); returns its command line (to
    /// run inside the network, with HOME set to the home returned).
    public static func prepare(in network: PrivateNetwork, sipPort: UInt16, registrarPort: UInt16,
                               user: String) throws -> (arguments: [String], home: String) {
        let home = network.path("linphone-home")
        for part in ["", "/.local", "/.local/share", "/.local/share/linphone"] { mkdir(home + part, 0o755) }
        try writeTextFile(SoftphoneConfiguration.linphonerc(sipPort: sipPort, registrarPort: registrarPort, user: user), to: home + "/linphonerc")
        _ = try openFile(network.path(log), flags: O_WRONLY | O_CREAT)
        return ([binary, "-c", home + "/linphonerc", "-a", "-d", "4", "-l", network.path(log)], home)
    }
}
