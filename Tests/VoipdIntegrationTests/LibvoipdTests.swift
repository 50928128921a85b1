import Foundation
import Glibc
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// libvoipd, the C client library (Sources/libvoipd, the product `voipd-client`): a C app
/// built against it runs the whole lifecycle under a real voipd and valgrind, a fake
/// hostile voipd cannot crash it (AddressSanitizer, UndefinedBehaviorSanitizer), and its
/// archive carries only C with a visible API of `voipd_` functions.
@Suite("libvoipd", .serialized)
struct LibvoipdTests {
    /// Why the tests of the archive `swift build` made do not run under a sanitizer.
    static let linkedWithSanitizedLibrary: Comment = "under a sanitizer the archive is built with it too: a C app linked with it needs the sanitizer's runtime, valgrind cannot run one, and the sanitizer's symbols are visible; the normal suite runs this, and the hostile-voipd test checks libvoipd under ASan and UBSan"

    static let gcc = "/usr/bin/gcc"
    static let gxx = "/usr/bin/g++"
    static let valgrind = "/usr/bin/valgrind"
    static let readelf = "/usr/bin/readelf"

    static let root = packageDirectory
    static let sources = root + "/Sources/libvoipd"
    static let tests = root + "/Tests/libvoipd"
    /// The library product, built by `swift build` beside the other products.
    static var archive: String { Binaries.directory + "/libvoipd-client.a" }

    /// Builds Tests/libvoipd/lifecycle_app.c against the archive, as an app would. The
    /// archive's copy loses its debug information first: valgrind 3.19 cannot read what the
    /// Swift toolchain's clang writes ("possibly corrupted debuginfo file"), and gives up.
    static func buildApp(in directory: String) throws -> String {
        let binary = directory + "/lifecycle_app"
        let copy = directory + "/libvoipd-client.a"
        let stripped = try runCommand(["/bin/sh", "-c", "cp \"$0\" \"$1\" && strip --strip-debug \"$1\"", archive, copy])
        try #require(stripped.status == 0, "strip failed:\n\(stripped.output)")
        let compiled = try runCommand([gcc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-I", sources + "/include",
                                       tests + "/lifecycle_app.c", copy, "-o", binary])
        try #require(compiled.status == 0, "gcc failed:\n\(compiled.output)")
        return binary
    }

    /// The functions voipd.h declares.
    static func declaredFunctions() throws -> Set<String> {
        let header = try String(contentsOfFile: sources + "/include/voipd.h", encoding: .utf8)
        return Set(header.split(separator: "\n").filter { $0.hasPrefix("VOIPD_EXPORT ") }.compactMap { line in
            line.split(whereSeparator: { " (*".contains($0) }).first { $0.hasPrefix("voipd_") }.map(String.init)
        })
    }

    @Test("the archive holds C only: an app links it with libc alone; its visible symbols are exactly voipd.h's functions; voipd.h compiles as C99, C11 and C++11",
          .enabled(if: toolAvailableOrCI(gcc) && toolAvailableOrCI(gxx), "needs gcc and g++ (with CI=true their absence is a failure)"),
          .disabled(if: underSanitizer, linkedWithSanitizedLibrary))
    func archiveAndHeader() throws {
        try #require(toolExists(Self.gcc) && toolExists(Self.gxx) && toolExists(Self.readelf))
        let directory = try makeTemporaryDirectory("voipd-libvoipd-abi")
        defer { removeTree(directory) }
        let app = try Self.buildApp(in: directory)
        let needed = try runCommand([Self.readelf, "-dW", app]).output.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        #expect(needed.count == 1 && needed[0].contains("[libc.so.6]"), "\(needed)")

        // Global, defined, default-visibility symbols: the API, nothing else (the JSON reader,
        // framing and handle internals are hidden).
        let symbols = try runCommand([Self.readelf, "-sW", Self.archive]).output.split(separator: "\n").compactMap { line -> String? in
            let fields = line.split(separator: " ")
            guard fields.count >= 8, fields[4] == "GLOBAL", fields[5] == "DEFAULT", fields[6] != "UND" else { return nil }
            return String(fields[7])
        }
        #expect(Set(symbols) == (try Self.declaredFunctions()))
        #expect(symbols.count == Set(symbols).count)

        let source = directory + "/uses_header.c"
        try Data("""
        #include <voipd.h>
        #include <stddef.h>
        int main(void) { voipd *v = NULL; return voipd_api_version() == VOIPD_API_VERSION && v == NULL ? 0 : 1; }

        """.utf8).write(to: URL(fileURLWithPath: source))
        for (compiler, standard) in [(Self.gcc, "-std=c99"), (Self.gcc, "-std=c11"), (Self.gxx, "-std=c++11")] {
            let language = compiler == Self.gxx ? ["-x", "c++", source, "-x", "none"] : [source]
            let built = try runCommand([compiler, standard, "-pedantic", "-Wall", "-Wextra", "-Werror", "-I", Self.sources + "/include"]
                                       + language + [Self.archive, "-o", directory + "/uses_header"])
            #expect(built.status == 0, "\(compiler) \(standard):\n\(built.output)")
            #expect(try runCommand([directory + "/uses_header"]).status == 0, "\(compiler) \(standard)")
        }
    }

    @Test("a hostile voipd (malformed, oversized, mismatched and 20000 mutated frames) gets errors, never a crash, a leak or an out-of-bounds read (ASan, UBSan)",
          .enabled(if: toolAvailableOrCI(gcc), "needs gcc (with CI=true its absence is a failure)"))
    func hostileDaemon() throws {
        try #require(toolExists(Self.gcc))
        let directory = try makeTemporaryDirectory("voipd-libvoipd-hostile")
        defer { removeTree(directory) }
        let library = try FileManager.default.contentsOfDirectory(atPath: Self.sources).filter { $0.hasSuffix(".c") }.map { Self.sources + "/" + $0 }
        let binary = directory + "/hostile_voipd"
        let compiled = try runCommand([Self.gcc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-O1",
                                       "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer",
                                       "-I", Self.sources, "-I", Self.sources + "/include", Self.tests + "/hostile_voipd.c"] + library
                                      + ["-o", binary], timeout: .seconds(120))
        try #require(compiled.status == 0, "gcc failed:\n\(compiled.output)")
        let run = try runCommand([binary, "20000"], environment: currentEnvironment() + ["ASAN_OPTIONS=detect_leaks=1:abort_on_error=0"],
                                 timeout: .seconds(120))
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.hasSuffix("ok\n"), "\(run.output)")
    }

    /// Reads one valgrind log and checks that it reports no error, no leak, and no descriptor
    /// the app opened left open at exit (--track-fds; descriptors the app inherited do not
    /// count: voipd passes on those it inherited itself without close-on-exec).
    static func expectClean(valgrindLog path: String) {
        let log = ProcFS.read(path) ?? ""
        #expect(log.contains("ERROR SUMMARY: 0 errors from 0 contexts"), "\(path):\n\(log)")
        #expect(log.contains("All heap blocks were freed -- no leaks are possible"), "\(path):\n\(log)")
        #expect(log.contains("FILE DESCRIPTORS: "), "\(path): no descriptor report:\n\(log)")
        // "==pid== Open AF_INET socket 7: ..." then the line saying where it came from.
        let lines = log.split(separator: "\n").map { $0.drop { $0 != " " }.trimmingCharacters(in: .whitespaces) }
        for (index, line) in lines.enumerated() where line.hasPrefix("Open ") {
            let origin = index + 1 < lines.count ? lines[index + 1] : ""
            #expect(origin == "<inherited from parent>", "\(path): left open by the app: \(line) \(origin)")
        }
    }

    @Test("a C app on libvoipd under valgrind: hello, register, background, suspended (T), woken by data, acknowledged, exits; relaunched by data, gets its socket back, suspended again; no error, leak or descriptor left",
          .enabled(if: toolAvailableOrCI(gcc) && toolAvailableOrCI(valgrind), "needs gcc and valgrind (apt-get install valgrind; with CI=true their absence is a failure)"),
          .disabled(if: underSanitizer, linkedWithSanitizedLibrary))
    func lifecycleUnderValgrind() throws {
        try #require(toolExists(Self.gcc) && toolExists(Self.valgrind))
        let directory = try makeTemporaryDirectory("voipd-libvoipd-app")
        defer { removeTree(directory) }
        let app = try Self.buildApp(in: directory)
        // valgrind makes the app slow to start: voipd waits for its hello and its wakes longer.
        let harness = try DaemonHarness(arguments: ["--timing", "connectTimeout=120", "--timing", "wakeBudget=120"])
        defer { harness.stop() }
        let peer = try harness.makePeer()
        let output = directory + "/app.log"
        let log = try openFile(output, flags: O_WRONLY | O_CREAT | O_TRUNC)
        let launched = try harness.control.launch(
            [Self.valgrind, "--error-exitcode=99", "--leak-check=full", "--errors-for-leak-kinds=all", "--track-fds=yes",
             "--log-file=\(directory)/valgrind.%p.log", app, "127.0.0.1", "\(peer.port)"],
            name: "capp", waitForConnection: true, output: log.rawValue, timeout: .seconds(120))
        let pid = try #require(launched.pid)
        let remote = try peer.accept(timeout: .seconds(60))
        try waitForText("\(pid) registered sip: ok", in: output, timeout: .seconds(60))
        for line in ["retrieved sip: same socket", "keep-alive 600: success", "keep-alive 1: voipd: not in this state (invalidState)",
                     "keep-alive cleared: success", "unregister nothing: 1 noSuchSocket", "register a bad name: 1", "call active: success, ended: success"] {
            try waitForText("\(pid) \(line)", in: output)
        }
        #expect(try harness.control.sockets("capp").map(\.name) == ["sip"])

        // Background: the events, a background task begun and ended in the handler, SIGSTOP.
        try harness.suspend("capp", timeout: .seconds(60))
        #expect(processState(pid) == "T")
        try waitForText("\(pid) event: didEnterBackground -> background", in: output)
        try waitForText("\(pid) background task 1: success, success", in: output)

        // Data wakes it; it reads it and acknowledges; suspended again.
        try remote.write("ping\n")
        try waitForText("\(pid) peer: ping", in: output, timeout: .seconds(60))
        try waitForText("\(pid) event: voipSocketReadable -> background sip", in: output)
        try harness.waitForState("capp", .suspended, timeout: .seconds(60))
        #expect(processState(pid) == "T")
        #expect(try harness.status("capp").wakes == 1)

        // In the foreground, it is told to exit: it frees everything and exits 0.
        try harness.control.command(.foreground, "capp")
        try waitForText("\(pid) event: didBecomeActive -> active", in: output, timeout: .seconds(60))
        try remote.write("exit\n")
        let exited = try harness.waitForState("capp", .terminated, timeout: .seconds(60))
        #expect(exited.reason == "exited: exited with status 0", "valgrind exits 99 on an error or a leak")

        // Data on the held socket relaunches it in the background: hello hands the socket
        // back, the queued voipSocketReadable follows, it reads from the restored socket.
        try remote.write("again\n")
        try harness.waitForState("capp", .background, timeout: .seconds(60))
        let second = try #require(try harness.status("capp").pid)
        #expect(second != pid)
        try waitForText("\(second) hello: background, 1 restored, api 2", in: output, timeout: .seconds(60))
        try waitForText("\(second) restored sip", in: output)
        try waitForText("\(second) peer: again", in: output, timeout: .seconds(60))
        try waitForText("\(second) event: voipSocketReadable -> background sip", in: output)
        try harness.waitForState("capp", .suspended, timeout: .seconds(60))
        #expect(processState(second) == "T")

        try harness.control.command(.foreground, "capp")
        try waitForText("\(second) event: didBecomeActive -> active", in: output, timeout: .seconds(60))
        try remote.write("exit\n")
        let ended = try harness.waitForState("capp", .terminated, timeout: .seconds(60))
        #expect(ended.reason == "exited: exited with status 0")

        Self.expectClean(valgrindLog: directory + "/valgrind.\(pid).log")
        Self.expectClean(valgrindLog: directory + "/valgrind.\(second).log")
    }

    /// The C app under a first voipd, ready; the caller stops that voipd and lets a second
    /// one take its path. The app outlives the first voipd: `stop()` ends it by pid.
    final class OutlivingApp {
        let directory: String
        let first: DaemonHarness
        let pid: pid_t
        let remote: PeerConnection
        let output: String

        init(_ name: String, extraArguments: [String] = [], ready: String) throws {
            directory = try makeTemporaryDirectory(name)
            let app = try LibvoipdTests.buildApp(in: directory)
            first = try DaemonHarness()
            let peer = try first.makePeer()
            output = directory + "/app.log"
            let log = try openFile(output, flags: O_WRONLY | O_CREAT | O_TRUNC)
            let launched = try first.control.launch([app, "127.0.0.1", "\(peer.port)"] + extraArguments, name: "capp",
                                                    waitForConnection: true, output: log.rawValue)
            pid = try #require(launched.pid)
            remote = try peer.accept()
            try waitForText("\(pid) \(ready)", in: output)
        }

        /// Stops the first voipd (SIGTERM); the app reads end-of-file and lives on.
        func stopFirstDaemon() throws {
            try first.daemon.pidfd.send(SIGTERM)
            _ = try first.daemon.waitForExit(.seconds(20))
        }

        /// The next voipd, at the path the app knows (the first removed its socket on the way out).
        func secondDaemon() throws -> DaemonHarness {
            let second = try DaemonHarness()
            try #require(symlink(second.socketPath, first.socketPath) == 0, "symlink: \(errno)")
            return second
        }

        func stop() {
            kill(pid, SIGCONT)
            kill(pid, SIGKILL)
            first.stop()
            removeTree(directory)
        }
    }

    @Test("voipd_reconnect: after voipd stops, the app connects to the next voipd on the same path, says hello again and registers its socket again; that voipd suspends and wakes it",
          .enabled(if: toolAvailableOrCI(gcc), "needs gcc (with CI=true its absence is a failure)"),
          .disabled(if: underSanitizer, linkedWithSanitizedLibrary))
    func reconnectAfterRestart() throws {
        try #require(toolExists(Self.gcc))
        let app = try OutlivingApp("voipd-libvoipd-reconnect", ready: "call active: success, ended: success")
        defer { app.stop() }
        let (pid, output) = (app.pid, app.output)
        try app.stopFirstDaemon()
        try waitForText("\(pid) disconnected", in: output)
        let second = try app.secondDaemon()
        defer { second.stop() }
        try waitForText("\(pid) reconnected: active", in: output)
        #expect(try second.control.sockets("capp").map(\.name) == ["sip"])
        #expect(try second.status("capp").pid == pid)

        try second.suspend("capp")
        #expect(processState(pid) == "T")
        try app.remote.write("ping\n")
        try waitForText("\(pid) peer: ping", in: output)
        try second.waitForState("capp", .suspended)
    }

    @Test("voipd_set_reconnect: the app's dispatch reconnects by itself to the next voipd, tells supervisorUnavailable then supervisorAvailable, and restores its socket, keep-alive and background task",
          .enabled(if: toolAvailableOrCI(gcc), "needs gcc (with CI=true its absence is a failure)"),
          .disabled(if: underSanitizer, linkedWithSanitizedLibrary))
    func automaticReconnection() throws {
        try #require(toolExists(Self.gcc))
        let app = try OutlivingApp("voipd-libvoipd-automatic", extraArguments: ["--auto-reconnect"],
                                   ready: "automatic reconnection: success; keep-alive: success; task 1: success")
        defer { app.stop() }
        let (pid, output) = (app.pid, app.output)
        #expect(try app.first.status("capp").backgroundTasks == 1)
        #expect(try app.first.status("capp").reachableForSeconds == 300)
        try waitForText("\(pid) keep-alive minimum 600 s, time scale 1", in: output)
        try app.stopFirstDaemon()
        try waitForText("\(pid) event: supervisorUnavailable", in: output)
        let second = try app.secondDaemon()
        defer { second.stop() }
        try waitForText("\(pid) event: supervisorAvailable", in: output)
        let status = try second.status("capp")
        #expect(status.pid == pid)
        #expect(status.keepAliveSeconds == 600 && status.reachableForSeconds == 300, "restored with what it said: \(status)")
        #expect(status.backgroundTasks == 1)
        #expect(try second.control.sockets("capp").map(\.name) == ["sip"])
        // The new voipd's events reach the handler; the app still reads its socket.
        try second.control.command(.background, "capp")
        try waitForText("\(pid) event: didEnterBackground -> background", in: output)
        try app.remote.write("ping\n")
        try waitForText("\(pid) peer: ping", in: output)
    }
}
