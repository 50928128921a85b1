import Glibc
import VoipdSystem
import VoipdTestSupport

/// Kamailio with the project's configuration, through `Deploy/kamailio/run-kamailio.sh PORT
/// RUNDIR` (which execs it: the script's pid is Kamailio's), on a free loopback port. It is
/// a direct child, started through ``GuardedExec`` so that it gets SIGTERM if the bench
/// dies, and ready once its log (standard error, a pipe to the bench) says so.
final class KamailioUnderTest {
    let port: UInt16
    private let process: PidFd
    private let log: ChildLog
    private let runDirectory: TemporaryDirectory
    private var stopped = false

    static var script: String { BenchPaths.packageRoot + "/Deploy/kamailio/run-kamailio.sh" }

    init(binary: String) throws {
        runDirectory = try TemporaryDirectory("voipd-bench")
        port = try freeLoopbackPort()
        let pipe = try makePipe()
        let readEnd = pipe.first
        let writeEnd = pipe.second
        log = ChildLog(readEnd)
        let command = GuardedExec.wrap([Self.script, "\(port)", runDirectory.path])
        let pid = try spawnProcess(SpawnRequest(arguments: command, environment: currentEnvironment() + ["KAMAILIO=\(binary)"],
                                                standardOutput: writeEnd.rawValue, standardError: writeEnd.rawValue))
        process = try PidFd(pid: pid)
        // Kamailio and its workers hold the write end now: the log ends when they do.
        try writeEnd.close()
        do {
            try log.waitForLine(containing: "voipd: kamailio ready", milliseconds: 10_000)
        } catch {
            stop()
            throw BenchError("kamailio did not start (\(Self.script) \(port)): \(error); its log ends:\n\(log.tail)")
        }
    }

    deinit { stop() }

    /// Reads what it has logged without waiting (between calls: a full pipe would block it).
    func drain() throws { try log.drain() }

    var logTail: String { log.tail }

    /// SIGTERM (it exits within milliseconds), SIGKILL after 5 s; reaps it.
    func stop() {
        guard !stopped else { return }
        stopped = true
        try? process.send(SIGTERM)
        if (try? waitReadable(process.descriptor.rawValue, milliseconds: 5000)) != true {
            progress("kamailio did not stop within 5 s of SIGTERM: killing it")
            try? process.send(SIGKILL)
        }
        _ = try? process.waitForExit()
    }
}

/// A loopback TCP port the kernel just handed out and that is free again: a server started
/// right after gets it unless another process takes it in between.
func freeLoopbackPort() throws -> UInt16 {
    let listener = try Socket.listenTCP(host: "127.0.0.1", port: 0)
    return try Socket.localPort(listener)
}
