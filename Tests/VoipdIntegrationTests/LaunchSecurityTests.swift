import Foundation
import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport

/// A root voipd starting programs for another uid (docs/SECURITY.md, "Launching as another
/// user"): nothing the request carries reaches a process before it runs as the requester,
/// and the program starts with nothing of voipd's (privileges, descriptors, groups, limits,
/// terminal, environment). Each test asks as uid 65534 (nobody), through setpriv.
@Suite("launch as another uid", .serialized)
struct LaunchSecurityTests {
    static let nobody: uid_t = 65534
    static let asNobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

    static func voipctlAsNobody(_ harness: DaemonHarness, _ arguments: [String]) throws -> (status: Int32, output: String) {
        try runCommand(asNobody + [Binaries.voipctl, "--socket", harness.socketPath] + arguments)
    }

    /// The issue's reproduction: `LD_PRELOAD` given in a launch request must be honoured only
    /// by the program, running as the requester. A root step run with it (the old `--run-as`
    /// helper) records uid 0.
    @Test("a launch's LD_PRELOAD never runs as root", .enabled(if: getuid() == 0 && toolAvailableOrCI("/usr/bin/setpriv") && toolAvailableOrCI("/usr/bin/gcc"), "needs root, setpriv and gcc"))
    func preloadRunsOnlyAsTheRequester() throws {
        let directory = try makeTemporaryDirectory("voipd-preload")
        defer { removeTree(directory) }
        let library = try Self.buildMarker(in: directory)
        let marks = directory + "/marks"
        try Self.createWorldWritable(marks)
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let launched = try Self.voipctlAsNobody(harness, ["launch", "--name", "marked", "--no-protocol",
                                                          "--env", "LD_PRELOAD=\(library)", "--env", "MARK_FILE=\(marks)", "--", "/bin/true"])
        #expect(launched.status == 0, "\(launched.output)")
        try harness.waitForState("marked", .terminated)
        let lines = (ProcFS.read(marks) ?? "").split(separator: "\n").map(String.init)
        // The program itself ran with the library: the marker works.
        #expect(lines.contains("uid=65534 euid=65534"), "\(lines)")
        #expect(lines.allSatisfy { $0 == "uid=65534 euid=65534" }, "a process ran the requester's LD_PRELOAD with other credentials: \(lines)")
    }

    /// Everything a program launched for uid 65534 starts with, read from /proc: that uid
    /// and group in full (real, effective, saved, filesystem), the account's groups and none
    /// of voipd's, no capability, no new privileges, the umask 022, no descriptor but 0–2
    /// (voipd was given an inheritable descriptor 3), the descriptor limit voipd started with
    /// (voipd raises its own), a session of its own without a terminal, default signals, and
    /// an environment with the account's identity and none of voipd's other variables.
    @Test("the program runs as the requester with nothing of voipd's",
          .enabled(if: getuid() == 0 && toolAvailableOrCI("/usr/bin/setpriv") && toolAvailableOrCI("/usr/bin/gcc"), "needs root, setpriv and gcc"))
    func launchedProgramStartsClean() throws {
        let directory = try makeTemporaryDirectory("voipd-cwd")
        defer { removeTree(directory) }
        let inheritable = try openFile("/dev/null", flags: O_RDONLY)
        let startLimit = ResourceLimit(resource: ResourceLimit.openFiles, soft: 1000, hard: 4096)
        let harness = try DaemonHarness(environment: ["SECRET_OF_VOIPD=s3cret"]) { request in
            request.extraDescriptors = [inheritable.rawValue]
            request.credentials = SpawnCredentials(uid: 0, gid: 0, supplementaryGroups: [0, 4, 27])
            request.resourceLimits = [startLimit]
            request.umask = 0o077
        }
        defer { harness.stop() }
        // The program says when it runs. The launch is answered once voipd's clone is in
        // execve (it shares voipd's memory until then), before the kernel has laid out the
        // new program's stack: /proc/PID/environ can still read empty.
        let probe = try Self.buildProbe(in: directory)
        let output = directory + "/output"
        try Self.createWorldWritable(output)
        let launched = try Self.voipctlAsNobody(harness, ["launch", "--name", "probe", "--no-protocol", "--cwd", directory, "--output", output,
                                                          "--env", "LD_LIBRARY_PATH=/nowhere", "--", probe])
        #expect(launched.status == 0, "\(launched.output)")
        try waitForText("started", in: output)
        let pid = try #require(try harness.status("probe").pid)
        let status = Self.procStatus(pid)
        #expect(status["Uid"] == "65534 65534 65534 65534")
        #expect(status["Gid"] == "65534 65534 65534 65534")
        let groups = try SpawnCredentials(user: "nobody", uid: Self.nobody, gid: 65534).supplementaryGroups
        #expect(status["Groups"] == groups.map(String.init).joined(separator: " "), "voipd's groups 4 and 27 must not leak")
        for set in ["CapInh", "CapPrm", "CapEff", "CapAmb"] { #expect(status[set] == "0000000000000000", "\(set)") }
        #expect(status["NoNewPrivs"] == "1")
        #expect(status["Umask"] == "0022")
        #expect(status["SigBlk"] == "0000000000000000")
        #expect(status["SigIgn"] == "0000000000000000")
        #expect(ProcFS.descriptors(of: pid).sorted() == [0, 1, 2])
        let limits = ProcFS.read("/proc/\(pid)/limits") ?? ""
        let openFiles = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }?.split(separator: " ", omittingEmptySubsequences: true)
        #expect(openFiles?.dropFirst(3).prefix(2).map(String.init) == ["1000", "4096"], "\(openFiles ?? [])")
        let stat = try #require(ProcFS.read("/proc/\(pid)/stat"))
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        #expect(fields[3] == "\(pid)", "leads its own session")
        #expect(fields[4] == "0", "no controlling terminal")
        #expect(Self.link("/proc/\(pid)/cwd") == directory)
        let environment = Self.environment(of: pid)
        #expect(environment.contains("USER=nobody"))
        #expect(environment.contains("LOGNAME=nobody"))
        #expect(environment.contains("HOME=/nonexistent"))
        #expect(environment.contains("LD_LIBRARY_PATH=/nowhere"))
        #expect(environment.contains("VOIPD_APP_NAME=probe"))
        #expect(environment.contains("VOIPD_SOCKET=\(harness.socketPath)"))
        #expect(!environment.contains { $0.hasPrefix("SECRET_OF_VOIPD=") }, "voipd's environment must not reach another user's app")
    }

    /// The working directory is entered, and the program looked up, as the requester: a
    /// directory only root may enter refuses both, and nothing is left behind.
    @Test("the working directory and the program are reached as the requester", .enabled(if: getuid() == 0 && toolAvailableOrCI("/usr/bin/setpriv"), "needs root and setpriv"))
    func directoryAndProgramCheckedAsTheRequester() throws {
        let directory = try makeTemporaryDirectory("voipd-private")
        defer { removeTree(directory) }
        chmod(directory, 0o700)
        let program = directory + "/true"
        let copied = try runCommand(["/bin/cp", "/bin/true", program])
        #expect(copied.status == 0)
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let intoDirectory = try Self.voipctlAsNobody(harness, ["launch", "--name", "inside", "--no-protocol", "--cwd", directory, "--", "/bin/sleep", "300"])
        #expect(intoDirectory.status == 1)
        #expect(intoDirectory.output.contains("launchFailed") && intoDirectory.output.contains("chdir(\(directory))")
                && intoDirectory.output.contains("Permission denied"), "\(intoDirectory.output)")
        let hiddenProgram = try Self.voipctlAsNobody(harness, ["launch", "--name", "hidden", "--no-protocol", "--", program])
        #expect(hiddenProgram.status == 1)
        #expect(hiddenProgram.output.contains("launchFailed") && hiddenProgram.output.contains("Permission denied"), "\(hiddenProgram.output)")
        #expect(try harness.control.status().isEmpty, "a launch that failed leaves no app")
        // Root, for comparison, may do both.
        let asRoot = try runCommand([Binaries.voipctl, "--socket", harness.socketPath, "launch", "--name", "inside", "--no-protocol", "--cwd", directory, "--", program])
        #expect(asRoot.status == 0, "\(asRoot.output)")
    }

    /// A manifest naming a user: the app runs as that account, and `"noNewPrivileges": false`
    /// leaves set-uid programs working for it (still without a capability).
    @Test("a manifest's user, and its noNewPrivileges switch", .enabled(if: getuid() == 0, "needs root"))
    func manifestAccount() throws {
        let apps = try makeTemporaryDirectory("voipd-apps")
        defer { removeTree(apps) }
        for (name, allow) in [("strict", true), ("lenient", false)] {
            let manifest = #"{"command": "/bin/sleep", "arguments": ["300"], "user": "nobody", "speaksProtocol": false, "noNewPrivileges": \#(allow)}"#
            try Data(manifest.utf8).write(to: URL(fileURLWithPath: "\(apps)/\(name).json"))
        }
        let harness = try DaemonHarness(arguments: ["--apps-directory", apps])
        defer { harness.stop() }
        for (name, flag) in [("strict", "1"), ("lenient", "0")] {
            let launched = try runCommand([Binaries.voipctl, "--socket", harness.socketPath, "launch", name])
            #expect(launched.status == 0, "\(launched.output)")
            let pid = try #require(try harness.status(name).pid)
            let status = Self.procStatus(pid)
            #expect(status["Uid"] == "65534 65534 65534 65534")
            #expect(status["CapEff"] == "0000000000000000")
            #expect(status["CapPrm"] == "0000000000000000")
            #expect(status["NoNewPrivs"] == flag, "\(name)")
        }
    }

    /// /proc/PID/status as a dictionary, each value with its whitespace made single spaces.
    static func procStatus(_ pid: pid_t) -> [String: String] {
        var result: [String: String] = [:]
        for line in (ProcFS.read("/proc/\(pid)/status") ?? "").split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let value = line[line.index(after: colon)...].split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
            result[String(line[..<colon])] = value
        }
        return result
    }

    static func environment(of pid: pid_t) -> [String] {
        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))) ?? Data()
        return bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    static func link(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink(path, &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A shared library whose constructor appends its process's uid and euid to $MARK_FILE.
    static func buildMarker(in directory: String) throws -> String {
        let source = directory + "/mark.c"
        let library = directory + "/mark.so"
        let code = """
            #include <fcntl.h>
            #include <stdio.h>
            #include <stdlib.h>
            #include <unistd.h>
            __attribute__((constructor)) static void mark(void) {
                const char *path = getenv("MARK_FILE");
                if (!path) return;
                int fd = open(path, O_WRONLY | O_APPEND);
                if (fd < 0) return;
                dprintf(fd, "uid=%u euid=%u\\n", getuid(), geteuid());
                close(fd);
            }
            """
        try Data(code.utf8).write(to: URL(fileURLWithPath: source))
        let built = try runCommand(["/usr/bin/gcc", "-shared", "-fPIC", "-o", library, source])
        guard built.status == 0 else { throw TimedOut(description: "gcc failed: \(built.output)") }
        chmod(library, 0o755)
        return library
    }

    /// A program that writes "started" and waits for a signal, changing nothing of what it
    /// was started with (an interpreter would: perl ignores SIGFPE, python SIGPIPE).
    static func buildProbe(in directory: String) throws -> String {
        let source = directory + "/probe.c"
        let program = directory + "/probe"
        let code = """
            #include <unistd.h>
            int main(void) {
                if (write(1, "started\\n", 8) != 8) return 1;
                for (;;) pause();
            }
            """
        try Data(code.utf8).write(to: URL(fileURLWithPath: source))
        let built = try runCommand(["/usr/bin/gcc", "-o", program, source])
        guard built.status == 0 else { throw TimedOut(description: "gcc failed: \(built.output)") }
        chmod(program, 0o755)
        return program
    }

    static func createWorldWritable(_ path: String) throws {
        let file = try openFile(path, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o666)
        fchmod(file.rawValue, 0o666)
    }
}
