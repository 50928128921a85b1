import SIP
import VoipClient
import VoipdSystem

/// One registrar and CPU placement: a fresh voipd, the registrar, the softphone launched
/// under voipd and registered; the wake floor; then the alternating calls. Whatever
/// happens, everything started here is stopped by pid or pidfd: the softphone is killed,
/// voipd gets SIGTERM (it would resume anything it stopped), Kamailio gets SIGTERM.
struct SIPMeasurement {
    let registrar: SIPOptions.Registrar
    let placement: CPUPlacement
    let setting: SIPSetting

    /// The caller's user; the softphone is ``SoftphoneUnderTest/user``.
    static let callerUser = "bob"

    func run() throws -> SIPRun {
        // voipd (and so the softphone), Kamailio and the registrar's thread inherit this
        // thread's CPU mask: everything on CPU 0 with --cpu 1, the scheduler's choice with 0.
        try pinCurrentThread(to: placement.supervisorCPU)
        let label = "registrar=\(registrar.rawValue) cpu=\(placement.rawValue)"
        let daemon = try DaemonUnderTest(binary: setting.voipd, directory: setting.directory)
        var server: RegistrarUnderTest?
        var phone: SoftphoneUnderTest?
        defer {
            phone?.kill()
            daemon.stop()
            server?.stop()
        }
        do {
            let registrarServer = try RegistrarUnderTest(registrar, kamailioBinary: setting.options.kamailio)
            server = registrarServer
            return try measure(label: label, daemon: daemon, server: registrarServer) { phone = $0 }
        } catch {
            let kamailioLog = server?.logTail.map { "\nkamailio's log ends:\n\($0)" } ?? ""
            throw BenchError("\(label): \(error)\nvoipd's log ends:\n\(daemon.log(tail: 20))\(kamailioLog)")
        }
    }

    /// The softphone launched and registered, the floor, the calls. `started` receives the
    /// softphone as soon as it exists, so that it is killed on any failure after.
    private func measure(label: String, daemon: DaemonUnderTest, server: RegistrarUnderTest,
                         started: (SoftphoneUnderTest) -> Void) throws -> SIPRun {
        // Following voipd's event stream before the launch: no transition is missed.
        let modes = try SoftphoneModes(socketPath: daemon.socketPath)
        let softphone = try SoftphoneUnderTest(binary: setting.softphone, registrar: server.address, control: modes.control)
        started(softphone)
        try softphone.waitUntilRegistered(milliseconds: 15_000)
        try modes.confirmRunning()
        let connection = try CallerConnection(host: server.host, port: server.port)
        let configuration = SIPCaller.Configuration(
            target: try SIPURI(parsing: "sip:\(SoftphoneUnderTest.user)@\(server.address)"), user: Self.callerUser,
            domain: server.address)
        let options = setting.options
        let figures = try setting.floor.run(children: 1, wakes: options.floorWakes, placement: placement, seed: options.seed)
        let (floorP50, floorP99) = (figures["wake_total_p50"]!, figures["wake_total_p99"]!)
        let warmUp = options.warmUpCalls
        progress("\(label): softphone pid \(softphone.pid) registered through \(server.address); floor p50 \(fixed(floorP50, 1)) us; "
                 + "\(warmUp) + \(options.calls) calls per mode; load average \(WakeBenchmark.loadAverage())")
        let loop = SIPCallLoop(connection: connection, configuration: configuration, softphone: softphone, modes: modes, registrar: server)
        let (running, suspended) = try loop.run(calls: options.calls, warmUp: warmUp)
        // Each call to the suspended softphone must have woken it: one wake per call.
        let wakes = try modes.control.app(SoftphoneUnderTest.name).wakes
        guard wakes >= warmUp + options.calls else {
            throw BenchError("voipd woke the softphone \(wakes) times for \(warmUp + options.calls) calls to it while suspended")
        }
        return SIPRun(running: Percentiles(nanoseconds: running), suspended: Percentiles(nanoseconds: suspended),
                      floorP50: floorP50, floorP99: floorP99, wakes: wakes)
    }
}

/// What every measurement of one run shares: the options, the binaries under test, the
/// floor, and the private directory for voipd's socket and log.
struct SIPSetting {
    let options: SIPOptions
    let voipd: String
    let softphone: String
    let floor: WakeFloor
    let directory: String
}
