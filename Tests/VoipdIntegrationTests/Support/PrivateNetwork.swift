import Foundation
import Glibc
import VoipdSystem
import VoipdTestSupport

/// A network namespace of the test's own, with only `lo` (and, when asked, an extra address
/// on it and a default route through it: liblinphone treats a network without a default
/// route as down). SIP programs inside use the standard ports without meeting other
/// engineers' Kamailio or baresip. The namespace lives as long as a holder process
/// (`unshare -n … exec cat`, reading a pipe the test holds); programs enter it with
/// `nsenter --net=/proc/HOLDER/ns/net`, which execs them, so their pids are theirs.
final class PrivateNetwork {
    static let tools = ["/usr/bin/unshare", "/usr/bin/nsenter", "/usr/sbin/ip", "/usr/bin/cat"]
    /// Whether the tests can run here: the tools, and root (a network namespace needs
    /// CAP_SYS_ADMIN). Under CI=true they run anyway, and fail.
    static let isAvailable = tools.allSatisfy(toolExists) && geteuid() == 0
    static let skipReason = "needs root and \(tools.joined(separator: ", ")) for a private network namespace"

    /// The extra address on `lo`, for programs that want one that is not loopback.
    static let address = "10.77.0.1"

    let directory: String
    private let holder: TestProcess
    private var input: DescriptorBox?
    private var started: [TestProcess] = []

    init(defaultRoute: Bool = false) throws {
        guard Self.isAvailable else { throw TimedOut(description: "CI=true requires these tests to run: \(Self.skipReason)") }
        directory = try makeTemporaryDirectory("voipd-netns")
        let route = defaultRoute ? " && /usr/sbin/ip route add default dev lo src \(Self.address)" : ""
        let script = "/usr/sbin/ip link set lo up && /usr/sbin/ip addr add \(Self.address)/32 dev lo\(route) && echo ready && exec /usr/bin/cat"
        let pipe = try makePipe()
        let readEnd = pipe.first
        let writeEnd = pipe.second
        let log = try openFile(directory + "/namespace.log", flags: O_WRONLY | O_CREAT | O_TRUNC)
        holder = try TestProcess(["/usr/bin/unshare", "-n", "--", "/bin/sh", "-c", script], output: log.rawValue) {
            $0.standardInput = readEnd.rawValue
        }
        input = DescriptorBox(writeEnd)
        do {
            try waitForText("ready", in: directory + "/namespace.log", timeout: .seconds(10))
        } catch {
            holder.stop()
            throw error
        }
    }

    /// Starts `arguments` inside the namespace, its output to `log` in the namespace's
    /// directory. Stopped with the namespace, by pid, if the test has not stopped it.
    func start(_ arguments: [String], log: String, environment: [String] = currentEnvironment(),
               adjust: (inout SpawnRequest) -> Void = { _ in }) throws -> TestProcess {
        let output = try openFile(directory + "/" + log, flags: O_WRONLY | O_CREAT | O_APPEND)
        let process = try TestProcess(entering(arguments),
                                      environment: environment, output: output.rawValue, adjust: adjust)
        started.append(process)
        return process
    }

    /// The command line that runs `arguments` inside the namespace (nsenter execs them, so
    /// the pid is theirs): for a process someone else starts, such as an app voipd launches.
    func entering(_ arguments: [String]) -> [String] {
        ["/usr/bin/nsenter", "--net=/proc/\(holder.pid)/ns/net", "--"] + arguments
    }

    func read(_ log: String) -> String { ProcFS.read(directory + "/" + log) ?? "" }

    /// Writes the manifest of an app that runs `command` inside the namespace through
    /// `/bin/sh -c 'exec "$@" REDIRECTIONS'` (a manifest has no descriptors to give it: its
    /// output goes to a file), with `keys` besides, into the apps directory it returns.
    func writeManifest(app: String, command: [String], redirections: String, keys: [String: Any]) throws -> String {
        let apps = directory + "/apps.d"
        mkdir(apps, 0o755)
        var manifest = keys
        manifest["command"] = "/bin/sh"
        manifest["arguments"] = ["-c", "exec \"$@\" \(redirections)", "sh"] + entering(command)
        try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: apps + "/\(app).json"))
        return apps
    }

    /// Stops what was started in it (SIGTERM first, so that programs with workers end them;
    /// then SIGKILL to each one's session), then the holder.
    func stop() {
        for process in started.reversed() {
            try? process.pidfd.send(SIGTERM)
            if (try? process.waitForExit(.seconds(5))) == nil { kill(-process.pid, SIGKILL) }
            process.stop()
        }
        started = []
        input = nil
        _ = try? holder.waitForExit(.seconds(5))
        holder.stop()
        removeTree(directory)
    }

    deinit { stop() }
}

/// Kamailio with the project's configuration (Deploy/kamailio/kamailio.cfg) inside a
/// private network, on 127.0.0.1:PORT for both UDP and TCP (run-kamailio.sh listens on TCP
/// only; `-l` adds listeners to the configuration's).
enum NamespacedKamailio {
    static let configuration = packageDirectory + "/Deploy/kamailio/kamailio.cfg"

    /// `maxExpires`: the longest registration it grants (Kamailio's configuration grants 3600 s).
    /// `defines`: kamailio.cfg's other variants (`WITHOUT_CONNECTION_REUSE`, …), as
    /// run-kamailio.sh's options give them.
    @discardableResult
    static func start(in network: PrivateNetwork, port: UInt16, maxExpires: Int? = nil, defines: [String] = []) throws -> TestProcess {
        let run = network.directory + "/kamailio"
        mkdir(run, 0o755)
        let expiry = maxExpires.map { ["-A", "MAX_EXPIRES=\($0)"] } ?? []
        let process = try network.start([KamailioServer.binary, "-f", configuration, "-A", "SIP_PORT=\(port)"] + expiry
                                        + defines.flatMap { ["-A", $0] }
                                        + ["-l", "udp:127.0.0.1:\(port)", "-l", "tcp:127.0.0.1:\(port)", "-DD", "-E",
                                           "-Y", run, "-P", run + "/kamailio.pid", "-w", run, "-m", "64", "-M", "8"], log: "kamailio.log")
        try waitForText("voipd: kamailio ready", in: network.directory + "/kamailio.log", timeout: .seconds(15))
        return process
    }
}
