import Glibc
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// s6-fdholderd as `s6-fdholder-daemon -1` starts it: its socket in the bench's directory,
/// access rules that let root store, retrieve, delete and list any identifier, ready when its
/// readiness newline arrives on the pipe given as its standard output.
final class S6FdholderUnderTest {
    static let program = "/usr/bin/s6-fdholder-daemon"
    let socketPath: String
    let process: PidFd
    /// Spawned → readiness newline read, in nanoseconds.
    private(set) var startNanoseconds: UInt64 = 0
    private let rules: String
    private var stopped = false

    /// Why s6-fdholderd cannot be run here, or nil when it can.
    static var unavailableReason: String? {
        access(program, X_OK) == 0 ? nil : "\(program) is not installed (Debian's s6)"
    }

    /// Starts it. `guarded`: through ``GuardedExec`` (SIGTERM if the bench dies), which adds
    /// the bench's own start to the time; the start-up benchmark runs it directly.
    init(directory: String, name: String = "s6-fdholderd", guarded: Bool = true) throws {
        socketPath = directory + "/\(name).sock"
        rules = directory + "/\(name)-rules"
        for made in [rules, rules + "/uid", rules + "/uid/0", rules + "/uid/0/env"] {
            guard mkdir(made, 0o700) == 0 || errno == EEXIST else { throw Errno.current("mkdir(\(made))") }
        }
        for (file, text) in [("allow", ""), ("env/S6_FDHOLDER_STORE_REGEX", ".*\n"), ("env/S6_FDHOLDER_RETRIEVE_REGEX", ".*\n"),
                             ("env/S6_FDHOLDER_LIST", "1\n")] {
            try openFile(rules + "/uid/0/" + file, flags: O_WRONLY | O_CREAT | O_TRUNC).writeAll(Array(text.utf8))
        }
        let pipe = try makePipe()
        let command = [Self.program, "-1", "-i", rules, socketPath]
        let started = MonotonicInstant.now
        let pid = try spawnProcess(SpawnRequest(arguments: guarded ? GuardedExec.wrap(command) : command, environment: currentEnvironment(),
                                                standardOutput: pipe.second.rawValue))
        process = try PidFd(pid: pid)
        try pipe.second.close()
        let deadline = started + .seconds(10)
        while true {
            guard MonotonicInstant.now < deadline, try waitReadable(pipe.first.rawValue, until: deadline) else {
                stop()
                throw BenchError("s6-fdholder-daemon did not say it was ready within 10 s")
            }
            let bytes = try pipe.first.read(upTo: 64)
            if bytes.contains(UInt8(ascii: "\n")) { break }
            guard !bytes.isEmpty else {
                stop()
                throw BenchError("s6-fdholder-daemon closed its readiness pipe without a newline (\(Self.program) \(command.dropFirst().joined(separator: " ")))")
            }
        }
        startNanoseconds = MonotonicInstant.now.nanoseconds - started.nanoseconds
    }

    deinit { stop() }

    var pid: pid_t { process.pid }

    /// SIGTERM, then SIGKILL after 5 s; reaps it and removes its rules.
    func stop() {
        guard !stopped else { return }
        stopped = true
        process.terminate()
        for file in ["allow", "env/S6_FDHOLDER_STORE_REGEX", "env/S6_FDHOLDER_RETRIEVE_REGEX", "env/S6_FDHOLDER_LIST"] { unlink(rules + "/uid/0/" + file) }
        for made in [rules + "/uid/0/env", rules + "/uid/0", rules + "/uid", rules] { rmdir(made) }
        unlink(socketPath)
    }
}

/// `Benchmarks/s6_fdholder_client.c`: s6-fdholderd's store and retrieve round trips through
/// libs6, built with gcc.
struct S6FdholderClient {
    let program: FloorProgram

    /// Builds it, or says why it cannot be (libs6-dev not installed).
    static func build(into directory: String) -> Result<S6FdholderClient, BenchError> {
        if let reason = S6FdholderUnderTest.unavailableReason { return .failure(BenchError(reason)) }
        let source = packageDirectory + "/Benchmarks/s6_fdholder_client.c"
        let headers = ["/usr/include/s6/fdholder.h", "/usr/include/x86_64-linux-gnu/s6/fdholder.h", "/usr/include/aarch64-linux-gnu/s6/fdholder.h"]
        guard headers.contains(where: { access($0, R_OK) == 0 }) else {
            return .failure(BenchError("libs6's headers are not installed (Debian's libs6-dev)"))
        }
        do {
            return .success(S6FdholderClient(program: try FloorProgram.compile(source, into: directory + "/s6_fdholder_client",
                                                                               libraries: ["-ls6", "-lskarnet"])))
        } catch {
            return .failure(BenchError("\(error)"))
        }
    }

    /// Store and retrieve round trips: `s6_store_p50`, `s6_retrieve_p99`… in µs.
    func run(socket: String, roundTrips: Int, batch: Int) throws -> [String: Double] {
        try program.run(["-p", socket, "-m", "\(roundTrips)", "-b", "\(batch)"],
                        required: ["s6_store_p50", "s6_store_p99", "s6_retrieve_p50", "s6_retrieve_p99"])
    }
}
