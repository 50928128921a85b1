import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport

/// The cgroup freezer with real processes: an app with threads and a child process, put in
/// its cgroup as it is started, frozen and thawed whole; a stray SIGCONT changes nothing;
/// `cgroup.kill` ends the tree; nothing is left in the hierarchy afterwards. Needs root and
/// a mounted hierarchy (skipped without them, failed under CI=true).
@Suite("cgroup freezer", .serialized)
struct FreezerTests {
    static let threads = 3

    @Test("v2: every task of an app and its child starts in the app's cgroup (clone3), freezes (S, no CPU), ignores a stray SIGCONT, runs again when thawed, and dies by cgroup.kill",
          .enabled(if: ScratchCgroup.availableOrCI(.v2) && (access(ProcessTreeProgram.gcc, X_OK) == 0 || runningUnderCI), "needs root, a cgroup2 mount and gcc"))
    func wholeTreeV2() throws {
        try checkWholeTree(.v2, join: .cloneIntoCgroup)
        // This kernel takes clone3 with CLONE_INTO_CGROUP: the test above went that way.
        #expect(SpawnCgroup.cloneIntoCgroupRefusal == nil, "clone3(CLONE_INTO_CGROUP) was refused: \(SpawnCgroup.cloneIntoCgroupRefusal.map { "\($0)" } ?? "")")
    }

    @Test("v2 without clone3: the child writes itself to cgroup.procs before anything else, and the tree freezes whole",
          .enabled(if: ScratchCgroup.availableOrCI(.v2) && (access(ProcessTreeProgram.gcc, X_OK) == 0 || runningUnderCI), "needs root, a cgroup2 mount and gcc"))
    func wholeTreeV2ByProcsWrite() throws {
        try checkWholeTree(.v2, join: .procsWrite)
    }

    @Test("v1: the freezer hierarchy's FROZEN and THAWED, tasks frozen in D, killed one by one through pidfds",
          .enabled(if: ScratchCgroup.availableOrCI(.v1) && (access(ProcessTreeProgram.gcc, X_OK) == 0 || runningUnderCI), "needs root, a cgroup v1 freezer mount and gcc"))
    func wholeTreeV1() throws {
        try checkWholeTree(.v1, join: .procsWrite)
    }

    func checkWholeTree(_ version: CgroupVersion, join: SpawnCgroup.Join) throws {
        let scratch = try ScratchCgroup(version)
        let build = try makeTemporaryDirectory("voipd-freezer")
        defer {
            removeTree(build)
            #expect(scratch.tearDown() == [], "cgroups left behind")
        }
        let binary = try ProcessTreeProgram.build(in: build)
        guard case .available(let freezer) = CgroupFreezer.detect(configuredDirectory: scratch.path, instance: "voipd") else {
            Issue.record("\(scratch.path) not taken as a cgroup directory: \(CgroupFreezer.detect(configuredDirectory: scratch.path, instance: "voipd"))")
            return
        }
        #expect(freezer.version == version && freezer.origin == .configured)
        let cgroup = try freezer.makeAppCgroup(for: "tree")
        var info = stat()
        #expect(stat(cgroup.path, &info) == 0 && info.st_uid == geteuid() && info.st_mode & 0o7777 == 0o755)

        var target = try cgroup.spawnTarget()
        #expect(target.join == (version == .v2 ? .cloneIntoCgroup : .procsWrite))
        target.join = join
        let app = try ProcessTreeApp(binary: binary, threads: Self.threads, countersPath: build + "/counters", cgroup: target)
        defer { app.stop() }
        // In the cgroup from its first instruction: main read it before anything else.
        let line = version == .v2 ? "0::\(scratch.cgroupPath(of: cgroup.path))" : "freezer:\(scratch.cgroupPath(of: cgroup.path))"
        #expect(app.cgroupAtStart.split(separator: ";").contains { $0.hasSuffix(line) }, "started in \(app.cgroupAtStart)")
        #expect(Set(try cgroup.processes()) == [app.pid, app.childPID])
        let tasks = app.tasks
        #expect(tasks.count == 2 * (Self.threads + 1), "\(tasks)")
        try expectAllRunning(tasks, "before the freeze")

        try cgroup.freeze()
        try waitUntilFrozen(cgroup)
        let frozenState: Character = version == .v2 ? "S" : "D"
        for task in tasks {
            #expect(taskState(pid: task.pid, tid: task.tid) == frozenState, "task \(task) frozen, not stopped")
        }
        try expectNoCPU(tasks, "frozen")
        try expectNoProgress(app, "frozen")

        // Someone else's SIGCONT (and a SIGSTOP and SIGCONT) resumes nothing. Under v2 the
        // task a signal is for is put on a CPU for a moment to take it, in the kernel, and
        // freezes again before returning to the app: none of the app's code runs.
        let null = try openFile("/dev/null", flags: O_WRONLY)
        for signal in ["-STOP", "-CONT"] {
            let status = try runToEnd(["/bin/kill", signal, "\(app.pid)", "\(app.childPID)"], output: null.rawValue)
            #expect(status == .exited(0))
        }
        try waitUntilFrozen(cgroup)
        #expect(try cgroup.isFrozen())
        try expectNoProgress(app, "frozen after a stray SIGCONT")
        // Each task the signals woke is back in the freezer's wait.
        try waitUntil("every task is \(frozenState) again after the stray signals") {
            tasks.allSatisfy { taskState(pid: $0.pid, tid: $0.tid) == frozenState }
        }

        try cgroup.thaw()
        #expect(try !cgroup.isFrozen())
        // SIGSTOP was taken while frozen: it stops the app once thawed, and the SIGCONT sent
        // after it had cancelled it. Every task runs.
        try expectAllRunning(tasks, "after the thaw")
        try expectProgress(app, "after the thaw")

        try cgroup.killAll()
        #expect(waitReadable(app.process.descriptor.rawValue, Deadline(.seconds(10))), "the app did not die")
        #expect(try app.process.waitForExit() == .killed(signal: SIGKILL, coreDumped: false))
        try waitUntilEmpty(cgroup)
        // Looked at once: init reaps the orphaned child when it likes, so a second look can
        // find no process where the first found a zombie.
        let child = ProcFS.state(of: app.childPID)
        #expect(child == nil || child == "Z", "the child survived: \(child.map { String($0) } ?? "gone")")
        try cgroup.remove()
        #expect(try freezer.appsWithCgroups() == [])
    }

    /// Every task is put on a CPU again within the deadline.
    func expectAllRunning(_ tasks: [(pid: pid_t, tid: pid_t)], _ when: String) throws {
        let before = tasks.map { TaskCPU(pid: $0.pid, tid: $0.tid) }
        try waitUntil("every task has run \(when)") {
            zip(tasks, before).allSatisfy { task, was in
                guard let was, let now = TaskCPU(pid: task.pid, tid: task.tid) else { return false }
                return now.runCount > was.runCount
            }
        }
    }

    /// No task of the app counts a tick over 300 ms: none of its code runs.
    func expectNoProgress(_ app: ProcessTreeApp, _ when: String) throws {
        let before = try app.ticks()
        observe(for: .milliseconds(300))
        #expect(try app.ticks() == before, "the app's code ran while \(when)")
    }

    /// Every task of the app counts a tick again within the deadline.
    func expectProgress(_ app: ProcessTreeApp, _ when: String) throws {
        let before = try app.ticks()
        try waitUntil("every task counts a tick \(when)") { try zip(app.ticks(), before).allSatisfy { $0 > $1 } }
    }

    /// No task is put on a CPU, or consumes any CPU time, over 300 ms.
    func expectNoCPU(_ tasks: [(pid: pid_t, tid: pid_t)], _ when: String) throws {
        let before = tasks.map { TaskCPU(pid: $0.pid, tid: $0.tid) }
        observe(for: .milliseconds(300))
        for (task, was) in zip(tasks, before) {
            let now = TaskCPU(pid: task.pid, tid: task.tid)
            #expect(was != nil && now == was, "task \(task) ran while \(when): \(was.map { "\($0)" } ?? "?") → \(now.map { "\($0)" } ?? "?")")
        }
    }
}
