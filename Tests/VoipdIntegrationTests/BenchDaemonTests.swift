import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// `voipd-bench` stops the voipd it started, by voipd's own pid, whatever `--voipd` wraps
/// it in.
@Suite("The bench's voipd", .serialized)
struct BenchDaemonTests {
    @Test("`voipd-bench hold --voipd SCRIPT`, the script running voipd under strace: once the bench has exited, that voipd has too",
          .enabled(if: SyscallFaults.available, "needs strace"),
          .disabled(if: underSanitizer, "the bench is a measuring tool, not the product: built with a sanitizer it measures nothing, and its voipd runs under ptrace, where LeakSanitizer cannot; the normal suite runs this"),
          .timeLimit(.minutes(3)))
    func wrappedVoipdStopped() throws {
        let directory = try makeTemporaryDirectory("voipd-bench-test")
        defer { removeTree(directory) }
        // As one traces voipd for a benchmark: strace runs it, the shell waits for strace.
        // The traced shell writes its pid down, then becomes voipd.
        let wrapper = directory + "/voipd-traced"
        let pids = directory + "/voipd.pids"
        let script = """
            #!/bin/sh
            \(SyscallFaults.strace) -f -qq -e trace=process -o \(directory)/strace.out /bin/sh -c 'echo $$ >> \(pids); exec "$0" "$@"' \(Binaries.voipd) "$@"

            """
        // Written by a shell of its own: a descriptor open for writing in this process, inherited
        // by a child another test forks meanwhile, would make its exec fail with ETXTBSY.
        let written = try runCommand(["/bin/sh", "-c", #"printf '%s' "$1" > "$2" && chmod 755 "$2""#, "sh", script, wrapper])
        #expect(written.status == 0, "\(written.output)")

        let bench = try runCommand([Binaries.path("voipd-bench"), "hold", "--sockets", "4", "--per-app", "2", "--listings", "1",
                                    "--upgrades", "0", "--cpu", "0", "--voipd", wrapper], timeout: .seconds(120))
        #expect(bench.status == 0, "\(bench.output)")

        let started = (ProcFS.read(pids) ?? "").split(separator: "\n").compactMap { pid_t($0) }
        #expect(started.count == 1, "the bench started one voipd: \(started)")
        for pid in started {
            // Alive, and voipd still (not a zombie, not another process with that pid since).
            guard let state = ProcFS.state(of: pid), state != "Z",
                  (ProcFS.read("/proc/\(pid)/cmdline") ?? "").contains(Binaries.voipd) else { continue }
            Issue.record("voipd (pid \(pid), state \(state)) still runs after the bench exited")
            let pidfd = try PidFd(pid: pid)
            try? pidfd.send(SIGTERM)
            if (try? waitReadable(pidfd.descriptor.rawValue, until: MonotonicInstant.now + .seconds(10))) != true { try? pidfd.send(SIGKILL) }
        }
    }
}
