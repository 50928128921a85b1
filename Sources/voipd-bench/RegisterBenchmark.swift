import Glibc
import VoipClient
import VoipdProtocol
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// `voipd-bench register`: registerSocket and retrieveSocket round trips through a real
/// voipd, beside the floor's request → reply-with-one-descriptor and s6-fdholderd's store
/// and retrieve, in the same run with the same placement.
enum RegisterBenchmark {
    static func main(_ arguments: [String]) -> Int32 {
        runSubcommand("register", arguments: arguments, run: run)
    }

    /// `voipd-bench register-client SOCKET ROUND-TRIPS [BATCH]`: the benchmark's app alone,
    /// against a voipd started by hand, with its p50s: what callgrind can count instructions
    /// of (valgrind 3.19 does not know `pidfd_open`, which the benchmark's own process
    /// handling uses), and what a profile of voipd's side can be taken with.
    static func clientMain(_ arguments: [String]) -> Int32 {
        guard arguments.count == 2 || arguments.count == 3, let roundTrips = Int(arguments[1]), roundTrips > 0,
              let batch = arguments.count == 3 ? Int(arguments[2]) : 64, (1...253).contains(batch) else {
            writeError("usage: voipd-bench register-client SOCKET ROUND-TRIPS [BATCH]\n")
            return 2
        }
        do {
            let client = try RegisteringApp(socketPath: arguments[0], batch: batch)
            let (register, retrieve) = try client.measure(roundTrips: roundTrips)
            print("registerSocket p50 \(fixed(register.p50, 1)) us p99 \(fixed(register.p99, 1)) us; "
                  + "retrieveSocket p50 \(fixed(retrieve.p50, 1)) us p99 \(fixed(retrieve.p99, 1)) us")
            return 0
        } catch {
            writeError("voipd-bench register-client: \(error)\n")
            return 1
        }
    }

    private static func run(_ options: RegisterOptions) throws {
        let voipd = try options.voipd ?? BenchPaths.buildVoipd()
        let directory = try TemporaryDirectory("voipd-bench")
        let floor = try FloorProgram.build("fdpass_floor", shared: options.shared, into: directory.path)
        let s6 = S6FdholderClient.build(into: directory.path)
        if case .failure(let reason) = s6 { progress("s6-fdholderd not measured: \(reason)") }
        progress("\(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPUs, load average \(WakeBenchmark.loadAverage())")
        for placement in options.placements {
            let result = try measure(placement: placement, options: options, voipd: voipd, floor: floor,
                                     s6: try? s6.get(), directory: directory.path)
            FreezeBenchmark.emit(options.json ? result.json : result.lines)
        }
        progress("done; load average \(WakeBenchmark.loadAverage())")
    }

    /// One placement: voipd and s6-fdholderd started on the daemons' CPU, then alternating
    /// runs of the floor, voipd and s6-fdholderd from the clients' CPU.
    private static func measure(placement: CPUPlacement, options: RegisterOptions, voipd: String, floor: FloorProgram,
                                s6: S6FdholderClient?, directory: String) throws -> RegisterResult {
        try pinCurrentThread(to: placement.supervisorCPU)
        let daemon = try DaemonUnderTest(binary: voipd, directory: directory)
        defer { daemon.stop() }
        let holder = try s6.map { _ in try S6FdholderUnderTest(directory: directory) }
        defer { holder?.stop() }
        try pinCurrentThread(to: placement.peerCPU)
        let client = try RegisteringApp(socketPath: daemon.socketPath, batch: options.batch)
        var result = RegisterResult(placement: placement, roundTrips: options.roundTrips, s6Measured: s6 != nil)
        for run in 1...options.runs {
            progress("cpu=\(placement.rawValue) run \(run)/\(options.runs)")
            let floorFigures = try floor.run(["-d", "1", "-r", "\(options.roundTrips)", "-c", "\(placement.rawValue)"],
                                             required: ["rtt_seqpacket_reply_1fd_p50", "rtt_seqpacket_reply_1fd_p99"])
            result.floor.append((floorFigures["rtt_seqpacket_reply_1fd_p50"]!, floorFigures["rtt_seqpacket_reply_1fd_p99"]!))
            let (register, retrieve) = try client.measure(roundTrips: options.roundTrips)
            result.register.append((register.p50, register.p99))
            result.retrieve.append((retrieve.p50, retrieve.p99))
            if let s6, let holder {
                let figures = try s6.run(socket: holder.socketPath, roundTrips: options.roundTrips, batch: options.batch)
                result.s6Store.append((figures["s6_store_p50"]!, figures["s6_store_p99"]!))
                result.s6Retrieve.append((figures["s6_retrieve_p50"]!, figures["s6_retrieve_p99"]!))
            }
        }
        return result
    }
}

/// An app that registers, retrieves and releases sockets as fast as voipd answers, through
/// VoIPApplication's own connection type.
final class RegisteringApp {
    let connection: VoipdConnection
    let names: [String]
    /// The connected socket registered under every name (voipd holds its own copy of each).
    let socket: DescriptorPair

    init(socketPath: String, batch: Int) throws {
        connection = try VoipdConnection(socketPath: socketPath)
        _ = try connection.request(.hello, { HelloRequest(id: $0, name: "register-bench") }, expecting: HelloResult.self)
        names = (0..<batch).map { "s\($0)" }
        socket = try Socket.pair()
    }

    /// `roundTrips` timed registrations and retrievals (after min(roundTrips/10, 200) of
    /// each not timed), in batches: every name registered, retrieved, then released.
    func measure(roundTrips: Int) throws -> (register: Percentiles, retrieve: Percentiles) {
        var registers: [UInt64] = []
        var retrieves: [UInt64] = []
        registers.reserveCapacity(roundTrips)
        retrieves.reserveCapacity(roundTrips)
        var done = -min(roundTrips / 10, 200)
        let descriptor = socket.first.rawValue
        while done < roundTrips {
            for (index, name) in names.enumerated() {
                let t0 = MonotonicInstant.now.nanoseconds
                _ = try connection.socketRequest(.registerSocket, name: name, descriptors: [descriptor])
                let t1 = MonotonicInstant.now.nanoseconds
                if done + index >= 0 && registers.count < roundTrips { registers.append(t1 - t0) }
            }
            for (index, name) in names.enumerated() {
                let t0 = MonotonicInstant.now.nanoseconds
                let (_, copies) = try connection.socketRequest(.retrieveSocket, name: name)
                let t1 = MonotonicInstant.now.nanoseconds
                copies.closeAll()
                if done + index >= 0 && retrieves.count < roundTrips { retrieves.append(t1 - t0) }
            }
            for name in names {
                _ = try connection.socketRequest(.unregisterSocket, name: name)
            }
            done += names.count
        }
        return (Percentiles(nanoseconds: registers), Percentiles(nanoseconds: retrieves))
    }
}

/// One placement's figures, per run, in µs.
struct RegisterResult {
    let placement: CPUPlacement
    let roundTrips: Int
    let s6Measured: Bool
    var floor: [(p50: Double, p99: Double)] = []
    var register: [(p50: Double, p99: Double)] = []
    var retrieve: [(p50: Double, p99: Double)] = []
    var s6Store: [(p50: Double, p99: Double)] = []
    var s6Retrieve: [(p50: Double, p99: Double)] = []

    private func medians(_ runs: [(p50: Double, p99: Double)]) -> (p50: Double, p99: Double) {
        (median(runs.map(\.p50)), median(runs.map(\.p99)))
    }

    /// Human-readable: one line per path, with its ratios to the floor and to s6.
    var lines: String {
        let floor = medians(self.floor)
        let paths = [("registerSocket", medians(register), medians(s6Store), "store"),
                     ("retrieveSocket", medians(retrieve), medians(s6Retrieve), "retrieve")]
        return paths.map { name, ours, s6, s6Name in
            "\(name) cpu=\(placement.rawValue): ours p50 \(fixed(ours.p50, 1)) us p99 \(fixed(ours.p99, 1)) us"
                + " | floor p50 \(fixed(floor.p50, 1)) us p99 \(fixed(floor.p99, 1)) us"
                + " | ratio p50 \(fixed(ours.p50 / floor.p50, 2)) p99 \(fixed(ours.p99 / floor.p99, 2))"
                + (s6Measured
                    ? " | s6 \(s6Name) p50 \(fixed(s6.p50, 1)) us p99 \(fixed(s6.p99, 1)) us, ours/s6 p50 \(fixed(ours.p50 / s6.p50, 2)) p99 \(fixed(ours.p99 / s6.p99, 2))"
                    : " | s6 not measured")
        }.joined(separator: "\n")
    }

    var json: String {
        var parts: [any Encodable] = [JSONHead(cpuMode: placement.rawValue, roundTrips: roundTrips, runs: floor.count, s6Measured: s6Measured)]
        for (name, runs) in [("floor", floor), ("register", register), ("retrieve", retrieve), ("s6_store", s6Store), ("s6_retrieve", s6Retrieve)] {
            let (p50, p99) = medians(runs)
            parts.append(PercentileFigures(name, p50: Rounded(p50), p99: Rounded(p99),
                                           runs: (runs.map { Rounded($0.p50) }, runs.map { Rounded($0.p99) })))
        }
        return jsonLine(FlatFigures(parts))
    }

    /// What the JSON line says before each path's percentiles.
    private struct JSONHead: Encodable {
        let test = "register"
        var cpuMode, roundTrips, runs: Int
        var s6Measured: Bool

        enum CodingKeys: String, CodingKey {
            case test, runs
            case cpuMode = "cpu_mode", roundTrips = "round_trips", s6Measured = "s6_measured"
        }
    }
}
