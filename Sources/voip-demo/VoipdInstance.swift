import Glibc
import VoipClient
import VoipdSystem

/// The voipd the demo runs: a private control socket in the demo's directory, its log in a
/// file there, ready once it says READY=1 on the notify socket (sd_notify).
final class VoipdInstance {
    let process: ChildProcess
    let socketPath: String
    let logPath: String
    let control: VoipdControl

    /// Starts voipd and waits (at most `timeout`) until it accepts connections.
    init(binary: String, directory: String, timeScale: Double, timeout: Duration = .seconds(10)) throws {
        socketPath = directory + "/voipd.sock"
        logPath = directory + "/voipd.log"
        let notifyPath = directory + "/notify.sock"
        let notify = try Socket.make(domain: AF_UNIX, type: Socket.datagramType)
        try bindDatagram(notify.rawValue, path: notifyPath)
        let log = try openFile(logPath, flags: O_WRONLY | O_CREAT | O_APPEND)
        // The demo's voipd keeps to its directory. As root, voipd reads /etc/voipd/voipd.json
        // and /etc/voipd/apps.d when voipd is installed: their manifests, limits and state
        // directory, whose state file is the installed voipd's, with its apps. It suspends
        // with SIGSTOP, whatever the machine offers: the demo shows the softphone in the
        // kernel's state T.
        let configuration = directory + "/voipd.json"
        try openFile(configuration, flags: O_WRONLY | O_CREAT | O_TRUNC).writeAll(Array(#"{"suspension": "signal"}"#.utf8 + [0x0a]))
        process = try ChildProcess(
            name: "voipd",
            arguments: [binary, "--socket", socketPath, "--time-scale", "\(timeScale)", "--no-memory-pressure-trigger",
                        "--config", configuration, "--apps-directory", directory + "/apps.d"],
            environment: childEnvironment() + ["NOTIFY_SOCKET=\(notifyPath)"], output: log.rawValue)
        do {
            try Self.waitForReady(notify.rawValue, process: process, timeout: timeout)
            control = try VoipdControl(socketPath: socketPath)
        } catch {
            process.stop()
            throw DemoFailure("voipd did not start: \(error)\n\(tail(of: logPath))")
        }
    }

    /// The last lines of voipd's log.
    var logTail: String { tail(of: logPath) }

    /// SIGTERM (voipd resumes whatever it stopped, then exits), SIGKILL if it lingers.
    func stop() {
        process.stop(grace: .seconds(5))
    }

    private static func waitForReady(_ notify: CInt, process: ChildProcess, timeout: Duration) throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var descriptors = [pollfd(fd: notify, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: process.pidfd.descriptor.rawValue, events: Int16(POLLIN), revents: 0)]
            _ = poll(&descriptors, 2, Int32(clamping: Int64(((deadline - .now) / .milliseconds(1)).rounded(.up))))
            if descriptors[1].revents != 0 { throw DemoFailure("it \(try process.waitForExit(timeout: .seconds(1)))") }
            guard descriptors[0].revents != 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { recv(notify, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0, String(decoding: buffer[..<count], as: UTF8.self).split(separator: "\n").contains("READY=1") { return }
        }
        throw DemoFailure("no READY=1 within \(timeout)")
    }
}

/// Binds a datagram socket to a path (the notify socket voipd reports readiness to).
private func bindDatagram(_ fd: CInt, path: String) throws {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw DemoFailure("socket path too long: \(path)") }
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes + [0]) }
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    if result != 0 { throw Errno.current("bind(\(path))") }
}

/// The last `count` lines of a file, indented, for a failure report.
func tail(of path: String, lines count: Int = 25) -> String {
    let lines = (ProcFS.read(path) ?? "").split(separator: "\n", omittingEmptySubsequences: false)
    return lines.suffix(count).map { "    " + $0 }.joined(separator: "\n")
}
