import Glibc
import SIP
import VoipClient
import VoipdSystem

// The steps, in order. Each waits for what it needs on the event pump, with a deadline.
extension DemoRun {
    func performSteps() throws {
        pump.add(try InterruptSignal())
        try startServices()
        try launchSoftphone()
        try suspendSoftphone()
        calls.append(try call(1))
        try lockScreen()
        calls.append(try call(2))
        try checkReconnection()
    }

    private func startServices() throws {
        step("Start voipd, a SIP registrar/proxy and a presence server on loopback")
        try startVoipd()
        try startRegistrar()
        let presence = try PresenceServer()
        self.presence = presence
        pump.add(presence)
        say("presence server: 127.0.0.1:\(presence.port), for the softphone's ordinary (non-VoIP) connection")
    }

    func startVoipd() throws {
        let voipd = try VoipdInstance(binary: Executables.path("voipd"), directory: directory, timeScale: options.timeScale)
        self.voipd = voipd
        say("voipd: pid \(voipd.process.pid), control socket \(voipd.socketPath), --time-scale \(options.timeScale)")
        let feed = try TransitionFeed(socketPath: voipd.socketPath)
        self.feed = feed
        pump.add(feed)
    }

    func startRegistrar() throws {
        if let external = options.registrar {
            (registrarHost, registrarPort) = external
            say("registrar: \(sipAddress), external (it must reach a user over its REGISTER connection)")
        } else {
            let tap = try RegistrarTap()
            let registrar = try SIPRegistrar(observer: tap.observer)
            try registrar.start()
            self.tap = tap
            self.registrar = registrar
            pump.add(tap)
            registrarPort = registrar.port
            say("registrar: embedded, \(sipAddress): it reaches a user only over the TCP connection of its REGISTER")
        }
    }

    private func launchSoftphone() throws {
        guard let voipd, let presence else { return }
        step("Launch the softphone under voipd, in the foreground")
        let arguments = [try Executables.path("softphone"), "--registrar", sipAddress, "--user", options.user,
                         "--presence", "127.0.0.1:\(presence.port)", "--presence-interval", "\(Self.presenceInterval)",
                         "--answer-after", "0.3"]
        let pipe = try makePipe()
        let readEnd = pipe.first
        let writeEnd = pipe.second
        launchedAt = WallClock.now
        let status = try voipd.control.launch(arguments, name: Self.appName, output: writeEnd.rawValue)
        // voipd has its own copy now; ours would only keep the pipe from ever ending.
        try writeEnd.close()
        let log = OutputLines(name: "softphone", reading: readEnd)
        softphoneLog = log
        pump.add(log)
        guard let pid = status.pid else { throw DemoFailure("voipd launched the softphone but reports no pid: \(status)") }
        softphone = try SupervisedProcess(pid: pid)
        tap?.watch(pid)
        say("voipctl launch --name \(Self.appName) -- softphone \(arguments.dropFirst().joined(separator: " "))")
        say("pid \(pid), state \(status.state.rawValue)")
        try pump.waitUntil("the softphone has registered and said hello to the presence server", timeout: .seconds(15)) {
            !log.lines(containing: "sip: registered for").isEmpty && presence.hasLine(1, startingWith: "HELLO")
        }
        registerConnection = tap?.connections(receiving: .register).first
        for line in log.lines(containing: "sip: connected to") + log.lines(containing: "sip: registered for") { say("softphone: \(line.text)") }
        say("presence server: connection 1 open, HELLO received")

        step("Measure the softphone running, with nothing to do, for \(Self.seconds(Self.idleWindow))")
        running = try measureIdleCost(of: pid)
    }

    static func milliseconds(_ duration: Duration) -> String {
        String(format: "%.2f ms", duration.seconds * 1000)
    }

    static func seconds(_ duration: Duration) -> String {
        String(format: "%.3g s", duration.seconds)
    }

    private func suspendSoftphone() throws {
        guard let voipd, let softphone else { return }
        step("Move the softphone to the background until voipd suspends it")
        try backgroundUntilSuspended("the softphone", timeout: .seconds(15))
        let listening = listeningTCPSocketCount(of: softphone.pid)
        guard listening == 0 else { throw DemoFailure("the softphone listens on \(listening) TCP port(s): it must not") }
        say("softphone listening sockets: none (from /proc): a call can only come over its own connection")
        let held = try voipd.control.sockets(Self.appName)
        say("voipd holds its VoIP socket(s): \(held.map { "\($0.name) (\($0.kind), watched: \($0.watching ? "yes" : "no"))" }.joined(separator: ", "))")

        step("Measure the softphone suspended, for \(Self.seconds(Self.idleWindow)) too")
        suspended = try measureIdleCost(of: softphone.pid, stopped: true)
    }

    /// Sends the app to the background and waits (up to `timeout`) until voipd has
    /// suspended it; says each transition on the way, and checks that it is stopped.
    func backgroundUntilSuspended(_ what: String, timeout: Duration) throws {
        guard let voipd, let feed, let softphone else { return }
        let since = WallClock.now
        backgroundedAt = since
        try voipd.control.command(.background, Self.appName)
        say("voipctl background \(Self.appName)")
        try pump.waitUntil("\(what) is suspended", timeout: timeout) {
            feed.first(Self.appName, to: "suspended", since: since) != nil
        }
        for transition in feed.transitions where transition.app == Self.appName && transition.time >= since {
            say("\(transition.from) → \(transition.to): \(transition.reason)")
        }
        try expectStopped(softphone, "once suspended")
    }

    /// What process `pid` costs over the idle window, said; `stopped`: it must have stayed
    /// stopped all along.
    func measureIdleCost(of pid: pid_t, stopped: Bool = false) throws -> IdleCost {
        let cost = try IdleCost.measure(pid, for: Self.idleWindow, on: pump)
        if stopped, let softphone { try expectStopped(softphone, "all along") }
        say("over \(Self.seconds(cost.window)): CPU time \(Self.milliseconds(cost.cpuTime)), \(cost.contextSwitches) context switches")
        return cost
    }

    func call(_ number: Int) throws -> CallObservation {
        guard let feed, let softphone, let log = softphoneLog else { throw DemoFailure("nothing to call") }
        step(number == 1 ? "Call the suspended softphone" : "Call it again")
        try expectStopped(softphone, "before the call")
        let before = try voipd?.control.app(Self.appName).state.rawValue ?? "?"
        let since = WallClock.now
        let output = try runCaller(number)
        try pump.waitUntil("voipd has resumed the softphone for call \(number)", timeout: .seconds(5)) {
            feed.transitions.contains { $0.app == Self.appName && $0.from == "suspended" && $0.to == "background" && $0.time >= since }
        }
        let resumed = feed.transitions.first { $0.app == Self.appName && $0.from == "suspended" && $0.to == "background" && $0.time >= since }
        try pump.waitUntil("the softphone is suspended again after call \(number)", timeout: .seconds(15)) {
            feed.first(Self.appName, to: "suspended", since: resumed?.time ?? since) != nil
        }
        let observation = CallObservation(
            number: number,
            stateBefore: before,
            inviteSent: output.lines(containing: "call: sent INVITE").first?.time,
            inviteForwarded: tap?.sent(.invite, since: since).first { $0.event.connection == registerConnection },
            resumed: resumed,
            inviteRead: log.lines(containing: "sip: received INVITE", since: since).first?.time,
            ringing: output.lines(containing: "received 180").first?.time,
            // "200 OK", or baresip's "200 Answering".
            answered: output.lines(containing: "(CSeq 1 INVITE)").first { $0.text.contains("received 200 ") }?.time,
            suspendedAgain: feed.first(Self.appName, to: "suspended", since: resumed?.time ?? since))
        try checkDelivery(observation)
        say("from the caller's INVITE:")
        for line in observation.steps { say(line) }
        say("wake latency: \(observation.wakeLatency)")
        return observation
    }

    /// Runs `softphone call` to the end; its output. Fails unless the call was answered.
    private func runCaller(_ number: Int) throws -> OutputLines {
        let target = "sip:\(options.user)@\(sipAddress)"
        let arguments = [try Executables.path("softphone"), "call", target, "--registrar", sipAddress, "--from", "bob", "--hold", "1"]
        let pipe = try makePipe()
        let readEnd = pipe.first
        let writeEnd = pipe.second
        let caller = try ChildProcess(name: "caller", arguments: arguments, environment: childEnvironment(), output: writeEnd.rawValue)
        self.caller = caller
        // With the caller's copy the only one left, the pipe ends when the caller does.
        try writeEnd.close()
        let output = OutputLines(name: "caller \(number)", reading: readEnd)
        callerLogs.append(output)
        pump.add(output)
        say("softphone call \(arguments.dropFirst(2).joined(separator: " "))   (pid \(caller.pid))")
        try pump.waitUntil("caller \(number) has finished", timeout: .seconds(30)) { output.ended }
        let status = try caller.waitForExit(timeout: .seconds(5))
        self.caller = nil
        callersEnded.append((caller.pid, "\(status)"))
        pump.remove(output)
        for line in output.lines where line.text.contains("received") || line.text.contains("sent INVITE") || line.text.contains("sent BYE") {
            say("caller: \(line.text)")
        }
        guard status == .exited(0) else { throw DemoFailure("call \(number) was not answered: the caller \(status)") }
        return output
    }

    // Only connection reuse can deliver the INVITE: the Contact is unresolvable and the
    // softphone listens on no port. With the embedded registrar, check the connection too.
    private func checkDelivery(_ observation: CallObservation) throws {
        guard let tap, let registerConnection else { return }
        guard let forwarded = observation.inviteForwarded else {
            throw DemoFailure("the registrar did not send call \(observation.number)'s INVITE over the REGISTER connection (#\(registerConnection))")
        }
        if let state = forwarded.watchedProcessState, state != "T" {
            throw DemoFailure("the softphone was in state \(state), not T, when the registrar sent the INVITE")
        }
        let registerConnections = Set(tap.connections(receiving: .register))
        guard registerConnections == [registerConnection], !tap.closed(registerConnection) else {
            throw DemoFailure("the softphone's registration moved or dropped: REGISTERs on connections \(registerConnections.sorted())")
        }
        say("the INVITE went out on the REGISTER connection (#\(registerConnection)); softphone state at that moment: \(forwarded.watchedProcessState.map(String.init) ?? "?")")
    }

    private func lockScreen() throws {
        guard let voipd, let presence, let softphone else { return }
        step("Lock the screen while the softphone is suspended")
        lockedAt = WallClock.now
        try voipd.control.system(.lock)
        say("voipctl lock")
        try pump.waitUntil("the presence server sees the softphone's ordinary connection end", timeout: .seconds(10)) {
            presence.hasClosed(1)
        }
        let status = try voipd.control.app(Self.appName)
        reclaimedSockets = status.reclaimedSockets
        say("voipd reclaimed \(status.reclaimedSockets) ordinary socket(s): the presence server saw connection 1 end")
        try expectStopped(softphone, "after the lock")
        let held = try voipd.control.sockets(Self.appName)
        guard let sip = held.first(where: { $0.name == "sip" }), !sip.peerClosed else {
            throw DemoFailure("the VoIP socket did not survive the lock: \(held)")
        }
        say("its VoIP socket \"sip\" is untouched: held, watched: \(sip.watching ? "yes" : "no"), peer closed: no")
        if let tap, let registerConnection, tap.closed(registerConnection) {
            throw DemoFailure("the registrar saw the softphone's SIP connection close")
        }
        try voipd.control.system(.unlock)
        say("voipctl unlock")
    }

    private func checkReconnection() throws {
        guard let presence, let log = softphoneLog else { return }
        step("After the lock: the ordinary connection failed and came back; the SIP one never dropped")
        try pump.waitUntil("the softphone has reconnected to the presence server", timeout: .seconds(10)) {
            presence.openedCount >= 2 && presence.hasLine(2, startingWith: "HELLO")
        }
        for line in log.lines(containing: "presence: connection lost") + log.lines(containing: "presence: connected to").dropFirst() {
            say("softphone: \(line.text)")
        }
        let connections = log.lines(containing: "sip: connected to").count
        let losses = log.lines(containing: "sip: connection lost").count
        guard connections == 1, losses == 0 else {
            throw DemoFailure("the SIP connection did not last: \(connections) connections, \(losses) lost")
        }
        registers = log.lines(containing: "sip: sent REGISTER").count
        say("softphone: one SIP connection all along, never lost; \(registers) REGISTER; both calls came over it")
    }

    /// The softphone's kernel state, which must be T (stopped).
    @discardableResult
    func expectStopped(_ process: SupervisedProcess, _ when: String) throws -> Character? {
        let state = ProcFS.state(of: process.pid)
        guard state == "T" else {
            throw DemoFailure("the softphone (pid \(process.pid)) is in kernel state \(state.map(String.init) ?? "gone"), not T, \(when)")
        }
        say("softphone pid \(process.pid): kernel state T (stopped) \(when)")
        return state
    }
}
