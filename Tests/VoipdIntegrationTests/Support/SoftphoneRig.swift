import Foundation
import Glibc
import SIP
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// The softphone under a real voipd, registered with an in-process ``SIPRegistrar`` (whose
/// every message a ``RegistrarRecorder`` keeps) or with a Kamailio the test started, and
/// keeping its presence connection to a peer the test owns. ``stop()`` ends every process
/// (Kamailio's too), by pid.
final class SoftphoneRig {
    let harness: DaemonHarness
    let registrar: SIPRegistrar?
    let recorder: RegistrarRecorder?
    let kamailio: KamailioServer?
    let sipPort: UInt16
    let presence: TCPPeer
    let name: String
    let user: String
    var logPath: String { harness.directory + "/\(name).log" }
    private(set) var pid: pid_t = 0
    /// The presence peer's end of the softphone's first presence connection (closing it
    /// would make the softphone reconnect).
    private(set) var presenceConnection: PeerConnection?
    /// The manifest keys the softphone runs under, and voipd's apps directory (nil: it is
    /// launched with a command line, under no manifest).
    let manifest: (keys: [String: Any], directory: String)?

    /// A rig with the embedded registrar, or with `kamailio` (which the rig stops with the
    /// rest); voipd gets `daemonArguments` besides the harness's own. With `manifest`, the
    /// softphone is a manifest app with those keys (its command is written by ``launch(_:)``).
    init(timeScale: Double = 1, kamailio: KamailioServer? = nil, name: String = "phone", user: String = "alice",
         daemonArguments: [String] = [], manifest keys: [String: Any]? = nil) throws {
        self.name = name
        self.user = user
        self.kamailio = kamailio
        manifest = try keys.map { ($0, try makeTemporaryDirectory("voipd-phone-apps")) }
        if let kamailio {
            registrar = nil
            recorder = nil
            sipPort = kamailio.port
        } else {
            let recorder = RegistrarRecorder()
            let registrar = try SIPRegistrar(observer: recorder.observer)
            try registrar.start()
            self.recorder = recorder
            self.registrar = registrar
            sipPort = registrar.port
        }
        do {
            harness = try DaemonHarness(timeScale: timeScale, arguments: daemonArguments + (manifest.map { ["--apps-directory", $0.directory] } ?? []))
            presence = try TCPPeer()
        } catch {
            registrar?.stop()
            if let manifest { removeTree(manifest.directory) }
            throw error
        }
    }

    /// Launches the softphone in the foreground and waits until it has registered and
    /// connected to the presence peer; returns that presence connection.
    @discardableResult
    func launch(_ arguments: [String] = []) throws -> PeerConnection {
        let command = [Binaries.path("softphone"), "--registrar", "127.0.0.1:\(sipPort)", "--user", user,
                       "--presence", "127.0.0.1:\(presence.port)"] + arguments
        let status: AppStatus
        if let manifest {
            status = try launchManifest(command, manifest)
        } else {
            let log = try openFile(logPath, flags: O_WRONLY | O_CREAT | O_APPEND)
            status = try harness.control.launch(command, name: name, output: log.rawValue)
        }
        pid = status.pid ?? 0
        recorder?.watch(pid)
        try waitForLog("sip: registered for")
        let connection = try presence.accept()
        try expectHello(on: connection)
        presenceConnection = connection
        return connection
    }

    /// Writes the manifest (sh, which execs the softphone with its output in the log, is
    /// its command), has voipd read it (SIGHUP) and launches it by name.
    private func launchManifest(_ command: [String], _ manifest: (keys: [String: Any], directory: String)) throws -> AppStatus {
        var fields = manifest.keys
        fields["command"] = "/bin/sh"
        fields["arguments"] = ["-c", "exec \"$@\" >>\(logPath) 2>&1", "sh"] + command
        try JSONSerialization.data(withJSONObject: fields).write(to: URL(fileURLWithPath: manifest.directory + "/\(name).json"))
        kill(harness.daemon.pid, SIGHUP)
        try waitForText("app manifests in \(manifest.directory): \(name)", in: harness.logPath)
        return try harness.control.launchManifest(name)
    }

    /// Backgrounds the softphone and waits until voipd has suspended it (kernel state T).
    func suspend() throws {
        try harness.suspend(name)
        #expect(processState(pid) == "T", "voipd reports the softphone suspended: the kernel must too")
    }

    /// Waits for the softphone to reach `state` (see ``DaemonHarness/waitForState(_:_:timeout:)``).
    @discardableResult
    func waitForState(_ state: AppState, timeout: Duration = .seconds(20)) throws -> TransitionRecord {
        try harness.waitForState(name, state, timeout: timeout)
    }

    /// Runs `softphone call sip:USER@127.0.0.1:PORT` with `arguments`; its exit status and output.
    func call(_ arguments: [String] = []) throws -> (status: Int32, output: String) {
        try runCommand([Binaries.path("softphone"), "call", "sip:\(user)@127.0.0.1:\(sipPort)", "--from", "bob"] + arguments)
    }

    /// The softphone's log so far.
    var log: String { ProcFS.read(logPath) ?? "" }

    func waitForLog(_ text: String, timeout: Duration = .seconds(20)) throws {
        try waitForText(text, in: logPath, timeout: timeout)
    }

    /// The log's lines that contain `text`.
    func lines(containing text: String) -> [Substring] {
        log.split(separator: "\n").filter { $0.contains(text) }
    }

    /// The presence peer's next connection said HELLO.
    func expectHello(on connection: PeerConnection) throws {
        var received = ""
        let deadline = Deadline(.seconds(20))
        while !received.contains("HELLO \(user)") {
            guard !deadline.hasPassed, let text = try connection.read(timeout: .milliseconds(Int64(deadline.remainingMilliseconds))),
                  !text.isEmpty else {
                throw TimedOut(description: "no HELLO on the presence connection; got \"\(received)\"; softphone log:\n\(log)")
            }
            received += text
        }
    }

    /// Reads the presence connection to its end (what the softphone sent before is skipped);
    /// fails if it has not ended within the timeout.
    func expectEnd(of connection: PeerConnection, timeout: Duration = .seconds(10)) throws {
        let deadline = Deadline(timeout)
        while true {
            guard let text = try connection.read(timeout: .milliseconds(Int64(deadline.remainingMilliseconds))) else {
                throw TimedOut(description: "the presence connection did not end; softphone log:\n\(log)")
            }
            if text.isEmpty { return }
        }
    }

    /// The softphone's TCP connection to the SIP server (it must have exactly one).
    func sipConnection() throws -> ProcessTCPSocket {
        let connections = tcpSockets(of: pid).filter { $0.remotePort == sipPort }
        guard connections.count == 1, let connection = connections.first else {
            throw TimedOut(description: "the softphone has \(connections.count) connections to port \(sipPort): \(tcpSockets(of: pid))")
        }
        return connection
    }

    func stop() {
        harness.stop()
        registrar?.stop()
        kamailio?.stop()
        if let manifest { removeTree(manifest.directory) }
    }
}
