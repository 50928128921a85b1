#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import SIP

/// Kamailio started with Deploy/kamailio/run-kamailio.sh on an ephemeral port, as a direct
/// child (the script execs Kamailio, so the child's PID is Kamailio's main process).
final class KamailioProcess {
    /// `/usr/sbin/kamailio`, or `$KAMAILIO` (which run-kamailio.sh also honours).
    static let binary = ProcessInfo.processInfo.environment["KAMAILIO"] ?? "/usr/sbin/kamailio"
    static let isInstalled = access(binary, X_OK) == 0
    /// On CI a missing Kamailio is a failure, not a reason to skip.
    static let isRequired = ProcessInfo.processInfo.environment["CI"] == "true"
    /// Whether the Kamailio tests run: installed, or required (and then failing loudly).
    static let shouldRun = isInstalled || isRequired

    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Deploy/kamailio/run-kamailio.sh").path

    let pid: pid_t
    let port: UInt16
    let runDirectory: String
    let log: ProcessLog
    private var stopped = false

    /// Starts Kamailio (also on UDP with `udp`; with the other options of run-kamailio.sh)
    /// and waits until it accepts connections.
    init(udp: Bool = false, options: [String] = []) throws {
        guard Self.isInstalled else {
            throw TestFailure("\(Self.binary) is not installed, and CI=true requires the Kamailio tests to run")
        }
        port = try Self.freePort(udp: udp)
        var template = Array("/tmp/voipd-kamailio-XXXXXX".utf8CString)
        guard let directory = mkdtemp(&template) else { throw TestFailure("mkdtemp failed: errno \(errno)") }
        runDirectory = String(cString: directory)
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw TestFailure("pipe failed: errno \(errno)") }
        // Another test spawning a process meanwhile must not inherit the write end, or the
        // log would not end when this Kamailio does.
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let spawned = Self.spawn([Self.script] + (udp ? ["--udp"] : []) + options + ["\(port)", runDirectory], stderr: pipeEnds[1])
        close(pipeEnds[1])
        log = ProcessLog(reading: pipeEnds[0])
        guard let spawned else { throw TestFailure("posix_spawn \(Self.script) failed") }
        pid = spawned
        guard log.waitFor("voipd: kamailio ready", until: .now + .seconds(10)) else {
            stop()
            throw TestFailure("kamailio did not become ready on port \(port):\n\(log.contents)")
        }
    }

    deinit { stop() }

    /// Sends SIGTERM to Kamailio's PID and waits for it (and its log pipe) to end.
    func stop() {
        guard !stopped else { return }
        stopped = true
        kill(pid, SIGTERM)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        _ = log.waitForEnd(until: .now + .seconds(5))
        try? FileManager.default.removeItem(atPath: runDirectory)
    }

    // The kernel picks a free port; it is released for Kamailio to bind (SO_REUSEADDR). With
    // `udp` the port must be free for UDP too.
    static func freePort(udp: Bool) throws -> UInt16 {
        for _ in 0..<16 {
            let (fd, port) = try SIPSocket.listen(host: "127.0.0.1", port: 0)
            defer { close(fd) }
            guard udp else { return port }
            guard let address = SIPSocketAddress(numericHost: "127.0.0.1", port: port),
                (try? SIPDatagramSocket(binding: address)) != nil
            else { continue }
            return port
        }
        throw TestFailure("no port free for both TCP and UDP")
    }

    private static func spawn(_ arguments: [String], stderr: Int32) -> pid_t? {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stderr, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, nil, &argv, environ)
        return result == 0 ? pid : nil
    }
}
