import Glibc
import SIP
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// One registrar and CPU placement with baresip as the callee (issue 15): two unmodified
/// baresips registered over TCP, one unsupervised (carol) and one launched by a fresh voipd
/// that adopts it (alice); the wake floor; then calls in turn to carol, to alice in the
/// foreground (adopted and running) and to alice suspended. Everything started here is
/// stopped by pidfd: the adopted baresip is killed before voipd gets SIGTERM.
struct BaresipMeasurement {
    enum Mode: String, CaseIterable {
        /// carol, whom nobody supervises.
        case unsupervised
        /// alice, adopted, in the foreground: voipd holds copies of her SIP sockets.
        case running
        /// alice, adopted, in the background and stopped once measured quiet.
        case suspended
    }

    static let adoptedUser = "alice"
    static let unsupervisedUser = "carol"

    let registrar: SIPOptions.Registrar
    let placement: CPUPlacement
    let setting: SIPSetting

    func run() throws -> BaresipRun {
        try pinCurrentThread(to: placement.supervisorCPU)
        let label = "callee=baresip registrar=\(registrar.rawValue) cpu=\(placement.rawValue)"
        let directory = try TemporaryDirectory("voipd-bench")
        let options = setting.options
        var server: RegistrarUnderTest?
        var daemon: DaemonUnderTest?
        var adoptedProcess: AppProcessHandle?
        var unsupervised: BaresipUnderTest?
        defer {
            try? adoptedProcess?.pidfd.send(SIGCONT)
            try? adoptedProcess?.pidfd.send(SIGKILL)
            unsupervised?.stop()
            daemon?.stop()
            server?.stop()
        }
        do {
            let registrarServer = try RegistrarUnderTest(registrar, kamailioBinary: options.kamailio)
            server = registrarServer
            let adopted = try BaresipUnderTest(binary: options.baresip, directory: directory.path + "/alice", user: Self.adoptedUser,
                                               registrar: registrarServer, adoptedInto: directory.path + "/apps.d")
            // The machine's memory pressure (other programs') would have voipd terminate the
            // adopted baresip in the background, as a phone would: not what is measured here.
            let voipd = try DaemonUnderTest(binary: setting.voipd, directory: directory.path)
            daemon = voipd
            // Following voipd's event stream before the launch: no transition is missed.
            let modes = try SoftphoneModes(socketPath: voipd.socketPath, app: Self.adoptedUser)
            let pid = try adopted.launch(modes)
            adoptedProcess = AppProcessHandle(try PidFd(pid: pid))
            try adopted.waitUntilRegistered(milliseconds: 15_000)
            try modes.confirmRunning()
            let other = try BaresipUnderTest(binary: options.baresip, directory: directory.path + "/carol", user: Self.unsupervisedUser,
                                             registrar: registrarServer, adoptedInto: nil)
            unsupervised = other
            try other.waitUntilRegistered(milliseconds: 15_000)

            let connection = try CallerConnection(host: registrarServer.host, port: registrarServer.port)
            let floor = try setting.measureFloor(placement)
            progress("\(label): baresip pids \(pid) (adopted) and \(other.pid.map(String.init) ?? "?") registered through "
                     + "\(registrarServer.address); floor p50 \(fixed(floor.p50, 1)) us; \(options.warmUpCalls) + \(options.calls) calls per mode")
            let loop = try BaresipCallLoop(connection: connection, registrar: registrarServer, modes: modes, adopted: adopted, unsupervised: other)
            let latencies = try loop.run(calls: options.calls, warmUp: options.warmUpCalls)
            return BaresipRun(unsupervised: Percentiles(nanoseconds: latencies[Mode.unsupervised]!),
                              running: Percentiles(nanoseconds: latencies[Mode.running]!),
                              suspended: Percentiles(nanoseconds: latencies[Mode.suspended]!),
                              baseline: try setting.baseline(floor: floor, wakesOf: Self.adoptedUser, "the adopted baresip", control: modes.control))
        } catch {
            throw SIPSetting.failure(label, error, daemon: daemon, server: server)
        }
    }
}

/// The calls of one baresip measurement: one per mode in turn, so that drift falls on all
/// three alike. Every call is preceded by an OPTIONS its callee answers (in the foreground),
/// and the first `warmUp` calls of each mode are not kept.
struct BaresipCallLoop {
    let connection: CallerConnection
    let registrar: RegistrarUnderTest
    let modes: SoftphoneModes
    let adopted: BaresipUnderTest
    let unsupervised: BaresipUnderTest
    private let adoptedTarget: SIPCaller.Configuration
    private let unsupervisedTarget: SIPCaller.Configuration

    init(connection: CallerConnection, registrar: RegistrarUnderTest, modes: SoftphoneModes, adopted: BaresipUnderTest,
         unsupervised: BaresipUnderTest) throws {
        (self.connection, self.registrar, self.modes, self.adopted, self.unsupervised) = (connection, registrar, modes, adopted, unsupervised)
        func target(_ phone: BaresipUnderTest) throws -> SIPCaller.Configuration {
            SIPCaller.Configuration(target: try SIPURI(parsing: "sip:\(phone.user)@\(registrar.address)"),
                                    user: SIPMeasurement.callerUser, domain: registrar.address)
        }
        (adoptedTarget, unsupervisedTarget) = (try target(adopted), try target(unsupervised))
    }

    /// INVITE → 180 latencies in nanoseconds, per mode.
    func run(calls: Int, warmUp: Int) throws -> [BaresipMeasurement.Mode: [UInt64]] {
        var latencies: [BaresipMeasurement.Mode: [UInt64]] = [:]
        for index in 0..<(warmUp + calls) {
            for mode in BaresipMeasurement.Mode.allCases {
                let latency = try call(index, mode)
                if index >= warmUp { latencies[mode, default: []].append(latency) }
            }
        }
        return latencies
    }

    private func call(_ index: Int, _ mode: BaresipMeasurement.Mode) throws -> UInt64 {
        let callee = mode == .unsupervised ? unsupervised : adopted
        let configuration = mode == .unsupervised ? unsupervisedTarget : adoptedTarget
        let supervised: SoftphoneModes.Mode? = switch mode {
            case .unsupervised: nil
            case .running: .running
            case .suspended: .suspended
        }
        return try modes.measureCall(index, to: callee, in: supervised, modeName: mode.rawValue, connection: connection, configuration: configuration)
    }
}
