import Foundation
import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport

/// linphonec (Debian's linphone-cli, liblinphone 5.1), unmodified, in a private network with
/// a default route (without one liblinphone takes the network for down and opens no SIP
/// socket): a home of its own (it keeps a database under ~/.local/share/linphone), SIP over
/// UDP on its port, registering at 127.0.0.1:REGISTRARPORT, answering calls by itself (-a),
/// logging to a file of the network's directory. Its standard input is a pipe the test
/// holds: linphonec reads commands there.
final class Linphonec {
    static let binary = "/usr/bin/linphonec"
    /// Its log (`-l`), in the network's directory.
    static let log = "linphonec.log"

    let process: TestProcess
    private var input: DescriptorBox?

    var pid: pid_t { process.pid }

    init(in network: PrivateNetwork, sipPort: UInt16, registrarPort: UInt16, user: String) throws {
        let (arguments, home) = try Self.prepare(in: network, sipPort: sipPort, registrarPort: registrarPort, user: user)
        let pipe = try makePipe()
        let readEnd = pipe.first
        let writeEnd = pipe.second
        process = try network.start(arguments, log: "linphonec.out",
                                    environment: currentEnvironment().filter { !$0.hasPrefix("HOME=") } + ["HOME=\(home)"]) {
            $0.standardInput = readEnd.rawValue
        }
        input = DescriptorBox(writeEnd)
        try waitForText("LinphoneRegistrationOk", in: network.directory + "/" + Self.log, timeout: .seconds(30))
    }

    /// Writes its configuration in a home of the network's directory and creates its log
    /// (so that a wait can watch it before linphonec opens it); returns its command line (to
    /// run inside the network, with HOME set to the home returned).
    static func prepare(in network: PrivateNetwork, sipPort: UInt16, registrarPort: UInt16,
                        user: String) throws -> (arguments: [String], home: String) {
        let home = network.directory + "/linphone-home"
        for part in ["", "/.local", "/.local/share", "/.local/share/linphone"] { mkdir(home + part, 0o755) }
        try writeTextFile(SoftphoneConfiguration.linphonerc(sipPort: sipPort, registrarPort: registrarPort, user: user), to: home + "/linphonerc")
        _ = try openFile(network.directory + "/" + log, flags: O_WRONLY | O_CREAT)
        return ([binary, "-c", home + "/linphonerc", "-a", "-d", "4", "-l", network.directory + "/" + log], home)
    }
}
