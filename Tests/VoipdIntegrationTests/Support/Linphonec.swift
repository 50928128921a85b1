import Foundation
import Glibc
import Testing
import VoipdSystem

/// linphonec (Debian's linphone-cli, liblinphone 5.1), unmodified, in a private network with
/// a default route (without one liblinphone takes the network for down and opens no SIP
/// socket): a home of its own (it keeps a database under ~/.local/share/linphone), SIP over
/// UDP on its port, registering at 127.0.0.1:REGISTRARPORT, answering calls by itself (-a),
/// logging to a file of the network's directory. Its standard input is a pipe the test
/// holds: linphonec reads commands there.
final class Linphonec {
    static let binary = "/usr/bin/linphonec"

    let process: TestProcess
    let log: String
    private var input: DescriptorBox?

    var pid: pid_t { process.pid }

    init(in network: PrivateNetwork, sipPort: UInt16, registrarPort: UInt16, user: String) throws {
        let home = network.directory + "/linphone-home"
        mkdir(home, 0o755)
        for part in ["/.local", "/.local/share", "/.local/share/linphone"] { mkdir(home + part, 0o755) }
        let template = KamailioServer.script.replacingOccurrences(of: "kamailio/run-kamailio.sh", with: "softphones/linphonerc")
        let configuration = try #require(ProcFS.read(template), "\(template) is missing")
            .replacingOccurrences(of: "@SIP_PORT@", with: "\(sipPort)").replacingOccurrences(of: "@REGISTRAR_PORT@", with: "\(registrarPort)")
            .replacingOccurrences(of: "@USER@", with: user)
        let file = try openFile(home + "/linphonerc", flags: O_WRONLY | O_CREAT | O_TRUNC)
        try file.writeAll(Array(configuration.utf8))
        log = "linphonec.log"
        // Made here, so that the wait can watch it before linphonec opens it.
        _ = try openFile(network.directory + "/" + log, flags: O_WRONLY | O_CREAT)
        let pipe = try makePipe()
        let readEnd = pipe.first
        let writeEnd = pipe.second
        process = try network.start([Self.binary, "-c", home + "/linphonerc", "-a", "-d", "4", "-l", network.directory + "/" + log],
                                    log: "linphonec.out", environment: currentEnvironment().filter { !$0.hasPrefix("HOME=") } + ["HOME=\(home)"]) {
            $0.standardInput = readEnd.rawValue
        }
        input = DescriptorBox(writeEnd)
        try waitForText("LinphoneRegistrationOk", in: network.directory + "/" + log, timeout: .seconds(30))
    }
}
