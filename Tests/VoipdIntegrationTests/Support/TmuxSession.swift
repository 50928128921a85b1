import Foundation
import Glibc
import VoipdSystem
import VoipdTestSupport

/// A tmux server of the test's own, on a private socket (`tmux -S`, never anyone's default
/// server), with one session of a fixed size running a command: a real terminal for
/// full-screen programs. The screen is read with `capture-pane` each time the pane has
/// written something (`pipe-pane` into a FIFO the test polls), never on a timer. ``stop()``
/// kills the server by its pid, and what still runs in its pane.
final class TmuxSession {
    static let binary = "/usr/bin/tmux"

    let directory: String
    let socket: String
    let serverPID: pid_t
    /// The FIFO the pane's output is copied to, and a writer of our own so that it never
    /// reports end-of-file when tmux's writer goes.
    private let output: FileDescriptor
    private let keepOpen: FileDescriptor

    init(_ command: String, width: Int = 120, height: Int = 30) throws {
        directory = try makeTemporaryDirectory("voipd-tmux")
        socket = directory + "/tmux.sock"
        let fifo = directory + "/pane-output"
        guard mkfifo(fifo, 0o600) == 0 else { throw Errno.current("mkfifo") }
        output = try openFile(fifo, flags: O_RDONLY | O_NONBLOCK)
        keepOpen = try openFile(fifo, flags: O_WRONLY | O_NONBLOCK)
        // -f /dev/null: none of the machine's or the user's configuration.
        try Self.check(runCommand([Self.binary, "-S", socket, "-f", "/dev/null", "new-session", "-d",
                                   "-x", "\(width)", "-y", "\(height)", command]), "new-session")
        guard let pid = pid_t(try Self.check(runCommand([Self.binary, "-S", socket, "display-message", "-p", "#{pid}"]), "#{pid}")
            .trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw TimedOut(description: "tmux did not say its pid")
        }
        serverPID = pid
        try tmux("pipe-pane", "-O", "cat >> \(fifo)")
    }

    @discardableResult
    private static func check(_ result: (status: Int32, output: String), _ what: String) throws -> String {
        guard result.status == 0 else { throw TimedOut(description: "tmux \(what) failed (\(result.status)): \(result.output)") }
        return result.output
    }

    /// Runs a tmux command against this server; its output.
    @discardableResult
    func tmux(_ arguments: String...) throws -> String {
        try Self.check(runCommand([Self.binary, "-S", socket] + arguments), arguments.first ?? "")
    }

    /// The screen's lines, as text (`attributes`: with their SGR sequences; `history`: and
    /// the lines scrolled off it before).
    func screen(attributes: Bool = false, history: Bool = false) throws -> [String] {
        let flags = (attributes ? ["-e"] : []) + (history ? ["-S", "-"] : [])
        let text = try Self.check(runCommand([Self.binary, "-S", socket, "capture-pane", "-p"] + flags), "capture-pane")
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    /// A pane variable, such as `alternate_on` or `cursor_flag`.
    func format(_ name: String) throws -> String {
        try tmux("display-message", "-p", "#{\(name)}").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func sendKeys(_ keys: String...) throws {
        _ = try Self.check(runCommand([Self.binary, "-S", socket, "send-keys"] + keys), "send-keys")
    }

    /// Waits until the screen satisfies `condition`, looking again each time the pane writes.
    @discardableResult
    func waitForScreen(_ what: String, timeout: Duration = .seconds(20), _ condition: ([String]) throws -> Bool) throws -> [String] {
        let deadline = Deadline(timeout)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let lines = try screen()
            if try condition(lines) { return lines }
            guard waitReadable(output.rawValue, deadline) else {
                throw TimedOut(description: "the screen never showed \(what); it shows:\n\(lines.joined(separator: "\n"))")
            }
            while buffer.withUnsafeMutableBytes({ read(output.rawValue, $0.baseAddress, $0.count) }) > 0 {}
        }
    }

    /// The pids of the processes whose parent is `pid`.
    static func children(of pid: pid_t) -> [pid_t] {
        guard let directory = opendir("/proc") else { return [] }
        defer { closedir(directory) }
        var result: [pid_t] = []
        while let entry = readdir(directory) {
            let name = DirectoryEntry.name(entry)
            if let child = pid_t(name), ProcFS.parent(of: child) == pid { result.append(child) }
        }
        return result
    }

    /// The pid of the process named `command` (its /proc/PID/comm) running in the pane.
    func process(named command: String) throws -> pid_t? {
        guard let pane = pid_t(try format("pane_pid")) else { return nil }
        var queue = [pane]
        while let pid = queue.popLast() {
            if ProcFS.read("/proc/\(pid)/comm")?.trimmingCharacters(in: .whitespacesAndNewlines) == command { return pid }
            queue += Self.children(of: pid)
        }
        return nil
    }

    /// Kills what runs in the pane and the server, by pid, and removes the directory.
    func stop() {
        if let panePID = try? format("pane_pid"), let pid = pid_t(panePID) {
            for child in Self.children(of: pid) {
                kill(child, SIGCONT)
                kill(child, SIGKILL)
            }
            kill(pid, SIGKILL)
        }
        kill(serverPID, SIGKILL)
        removeTree(directory)
    }
}
