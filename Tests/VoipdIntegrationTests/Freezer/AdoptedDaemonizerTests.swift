import Foundation
import Glibc
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// An adopted program whose VoIP socket is held by a helper that left its process tree (a
/// double fork with `setsid` between, as daemons detach): with the cgroup freezer, voipd
/// follows the program through its cgroup, which every descendant stays in. Discovery finds
/// the helper's socket, the quiet measurement counts the helper's threads, the freeze
/// reaches every task, and a datagram for the helper thaws them all.
@Suite("voipd adopting a program that detaches a helper", .serialized)
struct AdoptedDaemonizerTests {
    /// The program: it forks, the child calls `setsid` and forks again and exits, and the
    /// grandchild, reparented away from the program, binds a UDP socket and reads it. The
    /// program and the helper each have a second thread; every thread but the helper's reader
    /// wakes five times a second (below the quiet threshold), so a frozen one is seen not to
    /// run. Lines in the output file: "program PID", "helper PID port PORT", "got TEXT".
    static let program = """
        import os, socket, sys, threading, time
        out = open(sys.argv[1], "a", buffering=1)
        def tick():
            while True: time.sleep(0.2)
        child = os.fork()
        if child == 0:
            os.setsid()
            if os.fork() != 0: os._exit(0)
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            threading.Thread(target=tick, daemon=True).start()
            out.write("helper %d port %d\\n" % (os.getpid(), s.getsockname()[1]))
            while True:
                out.write("got %s\\n" % s.recv(2048).decode())
        os.waitpid(child, 0)
        threading.Thread(target=tick, daemon=True).start()
        out.write("program %d\\n" % os.getpid())
        tick()
        """

    @Test("a helper that double-forked away holds the UDP socket: found through the app's cgroup, the whole program frozen (every task, no CPU), woken by a datagram the helper reads, frozen again",
          .enabled(if: ScratchCgroup.availableOrCI(.v2) && (toolExists("/usr/bin/python3") || runningUnderCI), "needs root, a cgroup2 mount and python3"),
          .timeLimit(.minutes(2)))
    func doubleForkedHelper() throws {
        try doubleForkedHelper(.v2)
    }

    @Test("the same with cgroup v1's freezer hierarchy (tasks frozen in D)",
          .enabled(if: ScratchCgroup.availableOrCI(.v1) && (toolExists("/usr/bin/python3") || runningUnderCI), "needs root, a cgroup v1 freezer mount and python3"),
          .timeLimit(.minutes(2)))
    func doubleForkedHelperV1() throws {
        try doubleForkedHelper(.v1)
    }

    func doubleForkedHelper(_ version: CgroupVersion) throws {
        let scratch = try ScratchCgroup(version)
        let directory = try makeTemporaryDirectory("voipd-daemonizer")
        defer {
            removeTree(directory)
            #expect(scratch.tearDown() == [], "cgroups left behind")
        }
        let output = directory + "/program.out"
        _ = try openFile(output, flags: O_WRONLY | O_CREAT)
        let apps = directory + "/apps"
        try makeDirectory(apps, mode: 0o755)
        let manifest: [String: Any] = ["command": "/usr/bin/python3", "arguments": ["-u", "-c", Self.program, output],
                                       "adopt": ["udp:local=127.0.0.1:*"], "quietWindowSeconds": 1]
        try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: apps + "/detacher.json"))
        let harness = try DaemonHarness(arguments: ["--config", try DaemonFreezerTests.freezerConfiguration(in: directory, scratch),
                                                    "--apps-directory", apps])
        defer { harness.stop() }
        _ = try harness.control.launchManifest("detacher")
        // Two processes write: the helper (a grandchild) may write its line after the program's.
        try waitForText("program ", in: output)
        try waitForText("helper ", in: output)
        let lines = (ProcFS.read(output) ?? "").split(separator: "\n").map { $0.split(separator: " ") }
        let helperLine = try #require(lines.first { $0.first == "helper" && $0.count == 4 })
        let helper = try #require(pid_t(helperLine[1]))
        let port = try #require(UInt16(helperLine[3]))
        let program = try #require(try harness.status("detacher").pid)

        // The helper left the program's process tree and process group, not its cgroup.
        #expect(!(try ProcessTree.below(program, limit: 64).processes.contains(helper)), "the helper is still below the program")
        #expect(ProcFS.processGroup(of: helper) != ProcFS.processGroup(of: program), "the helper is in a session of its own")
        let cgroup = scratch.path + "/voipd/app-detacher"
        #expect(Set(try ProcessTree.inCgroup(cgroup, limit: 64).processes) == [program, helper])

        _ = try harness.control.command(.background, "detacher")
        try harness.waitForState("detacher", .suspended, timeout: .seconds(30))
        let status = try harness.status("detacher")
        #expect(status.suspension == "cgroup \(version.rawValue) freezer")
        #expect(status.voipSockets == 1 && status.adoption?.adopted.first?.contains(":\(port)") == true,
                "the helper's socket adopted through the cgroup: \(String(describing: status.adoption))")
        #expect(status.adoption?.warning == nil, "\(String(describing: status.adoption))")

        // Every task of both processes frozen: in the freezer's wait (v2 S, v1 D), and none runs.
        #expect(DaemonFreezerTests.frozen(cgroup, version))
        let tasks = VoipdIntegrationTests.tasks(of: [program, helper])
        #expect(tasks.count == 4, "two threads in each process: \(tasks)")
        let frozenState: Character = version == .v2 ? "S" : "D"
        for task in tasks { #expect(taskState(pid: task.pid, tid: task.tid) == frozenState, "task \(task) frozen, not stopped") }
        let before = tasks.map { TaskCPU(pid: $0.pid, tid: $0.tid) }
        observe(for: .milliseconds(500))
        for (task, was) in zip(tasks, before) {
            #expect(was != nil && TaskCPU(pid: task.pid, tid: task.tid) == was, "task \(task) ran while frozen")
        }

        // A datagram for the helper thaws the whole program: the helper reads it, and every
        // task runs again.
        try AdoptionDaemonTests().sendDatagram("INVITE for the helper", toLoopbackPort: port)
        try harness.waitForState("detacher", .background)
        try waitForText("got INVITE for the helper", in: output)
        try waitUntil("every task has run again") {
            zip(tasks, before).allSatisfy { task, was in
                guard let was, let now = TaskCPU(pid: task.pid, tid: task.tid) else { return false }
                return now.runCount > was.runCount
            }
        }
        // Quiet again: frozen again, the same two processes, the socket still held once.
        try harness.waitForState("detacher", .suspended, timeout: .seconds(30))
        #expect(DaemonFreezerTests.frozen(cgroup, version))
        #expect(Set(try ProcessTree.inCgroup(cgroup, limit: 64).processes) == [program, helper])
        #expect(try harness.status("detacher").voipSockets == 1)
    }
}
