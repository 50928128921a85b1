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
            throw SIPSetting.failure(label, error, daemon: daemon, server: server)
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
        let floor = try setting.measureFloor(placement)
        progress("\(label): softphone pid \(softphone.pid) registered through \(server.address); floor p50 \(fixed(floor.p50, 1)) us; "
                 + "\(options.warmUpCalls) + \(options.calls) calls per mode; load average \(WakeBenchmark.loadAverage())")
        let loop = SIPCallLoop(connection: connection, configuration: configuration, softphone: softphone, modes: modes, registrar: server)
        let (running, suspended) = try loop.run(calls: options.calls, warmUp: options.warmUpCalls)
        return SIPRun(running: Percentiles(nanoseconds: running), suspended: Percentiles(nanoseconds: suspended),
                      baseline: try setting.baseline(floor: floor, wakesOf: SoftphoneUnderTest.name, "the softphone", control: modes.control))
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

    /// The run's wake floor, µs: one child, as the callee is one app.
    func measureFloor(_ placement: CPUPlacement) throws -> (p50: Double, p99: Double) {
        let figures = try floor.run(children: 1, wakes: options.floorWakes, placement: placement, seed: options.seed)
        return (figures["wake_total_p50"]!, figures["wake_total_p99"]!)
    }

    /// The run's baseline once its calls are made: `floor`, and voipd's count of `app`'s wakes,
    /// which must be one at least for each call to it while suspended.
    func baseline(floor: (p50: Double, p99: Double), wakesOf app: String, _ callee: String, control: VoipdControl) throws -> SIPRunBaseline {
        let wakes = try control.app(app).wakes
        let calls = options.warmUpCalls + options.calls
        guard wakes >= calls else { throw BenchError("voipd woke \(callee) \(wakes) times for \(calls) calls to it while suspended") }
        return SIPRunBaseline(floorP50: floor.p50, floorP99: floor.p99, wakes: wakes)
    }

    /// A failed measurement's error: its label, and the ends of voipd's and Kamailio's logs.
    static func failure(_ label: String, _ error: any Error, daemon: DaemonUnderTest?, server: RegistrarUnderTest?) -> BenchError {
        let kamailioLog = server?.logTail.map { "\nkamailio's log ends:\n\($0)" } ?? ""
        return BenchError("\(label): \(error)\nvoipd's log ends:\n\(daemon?.log(tail: 20) ?? "")\(kamailioLog)")
    }
}
