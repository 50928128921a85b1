import Glibc
import VoipdTestSupport
import VoipdSystem

// `voip-demo --softphone baresip`: the same story with a softphone nobody here wrote and
// that does not speak voipd's protocol (issue 15; docs/LIFECYCLE.md, "Adopted programs").
// voipd finds baresip's SIP sockets itself, holds copies, suspends it once it has measured
// it quiet, and wakes it when an INVITE arrives on its REGISTER connection.
extension DemoRun {
    /// Debian's baresip-core.
    static let baresipBinary = "/usr/bin/baresip"
    /// How long baresip must stay below the quiet thresholds before voipd suspends it (its
    /// manifest's `quietWindowSeconds`; 5 s by default).
    static let quietWindowSeconds = 1.0

    func performAdoptedSteps() throws {
        guard access(Self.baresipBinary, X_OK) == 0 else {
            throw DemoFailure("\(Self.baresipBinary) is not installed (apt-get install baresip-core)")
        }
        pump.add(try InterruptSignal())
        step("Start a SIP registrar/proxy on loopback, then voipd with a manifest for baresip")
        // The registrar first: baresip's manifest names its port, and voipd reads manifests
        // when it starts.
        try startRegistrar()
        try writeBaresipFiles()
        try writeManifest()
        try startVoipd()
        try launchBaresip()
        try suspendAdopted()
        calls.append(try call(1))
        calls.append(try call(2))
    }

    private func writeBaresipFiles() throws {
        let home = directory + "/baresip"
        mkdir(home, 0o755)
        mkdir(directory + "/apps.d", 0o755)
        // Its log comes to the demo through a FIFO: a manifest's program has no descriptor of
        // the demo's. Read and written by the demo, so that it never ends.
        let fifo = directory + "/baresip.log"
        guard mkfifo(fifo, 0o600) == 0 else { throw Errno.current("mkfifo(\(fifo))") }
        let log = OutputLines(name: "baresip", reading: try openFile(fifo, flags: O_RDWR))
        softphoneLog = log
        pump.add(log)
        baresipHome = home
    }

    /// The manifest voipd launches baresip from: adopted with `sip` (its own SIP port, UDP
    /// and TCP) and `sip:port=REGISTRAR` (its REGISTER connection), quiet after a second.
    private func writeManifest() throws {
        let manifest = SoftphoneConfiguration.adoptedBaresipManifest(binary: Self.baresipBinary, home: baresipHome, log: directory + "/baresip.log",
                                                                     registrarPort: registrarPort, quietWindowSeconds: Self.quietWindowSeconds)
        try writeTextFile(manifest, to: directory + "/apps.d/\(Self.appName).json")
    }

    private func launchBaresip() throws {
        guard let voipd, let feed, let log = softphoneLog else { return }
        step("Launch baresip, unmodified, under voipd: it does not speak voipd's protocol, voipd adopts it")
        try writeTextFile(SoftphoneConfiguration.baresipAccount(user: options.user, registrar: sipAddress), to: baresipHome + "/accounts")
        say("apps.d/\(Self.appName).json: \"adopt\": [\"sip\", \"sip:port=\(registrarPort)\"], \"quietWindowSeconds\": \(Self.quietWindowSeconds)")
        // baresip binds its SIP port itself and cannot be handed a bound socket: a port found
        // free may be taken before it binds it, and then only another port helps.
        let pid = try startOnFreePort("baresip", pickPort: { try freeSIPPortPair() }) { port in
            try launchBaresip(on: port, voipd: voipd, feed: feed, log: log)
        }
        softphone = try SupervisedProcess(pid: pid)
        tap?.watch(pid)
        registerConnection = tap?.connections(receiving: .register).first
        for line in log.lines(containing: "200 OK", since: launchedAt ?? 0).prefix(1) { say("baresip: \(line.text)") }

        step("Measure baresip running, with nothing to do, for \(Self.seconds(Self.idleWindow))")
        running = try measureIdleCost(of: pid)
    }

    /// One launch of baresip with its SIP on `port`: configured for it (from
    /// Deploy/softphones/baresip.config, as the adoption tests and the bench run it), launched
    /// by voipd from its manifest, and followed until it has registered or voipd has seen it
    /// end. Ended with EADDRINUSE before registering, it only lost the race for its port.
    private func launchBaresip(on port: UInt16, voipd: VoipdInstance, feed: TransitionFeed, log: OutputLines) throws -> PortBindOutcome<pid_t> {
        try writeTextFile(SoftphoneConfiguration.baresip(address: "127.0.0.1", sipPort: port), to: baresipHome + "/config")
        baresipSIPPort = port
        let since = WallClock.now
        launchedAt = since
        let status = try voipd.control.launchManifest(Self.appName)
        guard let pid = status.pid else { throw DemoFailure("voipd launched baresip but reports no pid: \(status)") }
        say("voipctl launch \(Self.appName)   (baresip -f \(baresipHome): SIP on 127.0.0.1:\(port), answering by itself)")
        say("pid \(pid), state \(status.state.rawValue)")
        let registered = { !log.lines(containing: "200 OK", since: since).isEmpty }
        try pump.waitUntil("baresip has registered", timeout: .seconds(15)) {
            registered() || feed.first(Self.appName, to: "terminated", since: since) != nil
        }
        guard !registered(), let ended = feed.first(Self.appName, to: "terminated", since: since) else { return .bound(pid) }
        let said = log.lines(containing: String(cString: strerror(EADDRINUSE)), since: since).map(\.text)
        guard ended.reason.hasSuffix("exited with status \(EADDRINUSE)") || !said.isEmpty else {
            throw DemoFailure("baresip ended before it registered (\(ended.reason))")
        }
        say("baresip could not bind port \(port), taken since it was found free (\(ended.reason)): again on another port")
        return .addressInUse(said.first ?? ended.reason)
    }

    private func suspendAdopted() throws {
        guard let voipd, let softphone else { return }
        step("Move baresip to the background: voipd looks at its sockets, measures it, and suspends it once quiet")
        try backgroundUntilSuspended("baresip", timeout: .seconds(20))
        let adoption = try voipd.control.app(Self.appName).adoption
        guard let adoption, !adoption.adopted.isEmpty else {
            throw DemoFailure("voipd suspended baresip holding none of its sockets: \(adoption.map { "\($0)" } ?? "no adoption")")
        }
        adoptedSockets = adoption.adopted
        adoptionVerdict = adoption.activity
        say("voipd took copies of its SIP sockets (rules \(adoption.rules.joined(separator: ", "))), and left \(adoption.ignored) alone:")
        for socket in adoption.adopted { say("  \(socket)") }
        if let activity = adoption.activity { say("last measurement: \(activity)") }

        step("Measure baresip suspended, for \(Self.seconds(Self.idleWindow)) too")
        suspended = try measureIdleCost(of: softphone.pid, stopped: true)
    }
}
