import Glibc
import Testing
@testable import VoipdSystem
import VoipdTestSupport

/// An app's cgroup around the freeze: who owns it and what the app can do to it, how a
/// spawn into it fails, what is refused (starting a process in a frozen cgroup, removing a
/// populated one), what a restarted voipd finds, and killing without `cgroup.kill`.
@Suite("app cgroups", .serialized)
struct AppCgroupTests {
    static let nobody = SpawnCredentials(uid: 65534, gid: 65534, supplementaryGroups: [])

    @Test("an app of another user starts in its cgroup but can neither thaw it nor leave it",
          .enabled(if: ScratchCgroup.availableOrCI(.v2), "needs root and a cgroup2 mount"))
    func appCannotThawOrLeave() throws {
        let scratch = try ScratchCgroup(.v2)
        defer { #expect(scratch.tearDown() == []) }
        let freezer = scratch.freezer
        let cgroup = try freezer.makeAppCgroup(for: "guest")
        let directory = try makeTemporaryDirectory("voipd-cgroup-guest")
        defer { removeTree(directory) }
        let report = directory + "/report"
        let output = try openFile(report, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o666)
        // Each attempt prints its exit status: 0 would mean it worked.
        let script = """
            cat /proc/self/cgroup
            echo 0 > "$1/cgroup.freeze" 2>/dev/null; echo thaw $?
            echo $$ > "$2/cgroup.procs" 2>/dev/null; echo leave-to-parent $?
            echo $$ > "$3/cgroup.procs" 2>/dev/null; echo leave-to-root $?
            mkdir "$1/inner" 2>/dev/null; echo make-inner $?
            """
        let target = try cgroup.spawnTarget()
        let status = try runToEnd(["/bin/sh", "-c", script, "sh", cgroup.path, scratch.path, scratch.mount.mountPoint], output: output.rawValue) {
            $0.credentials = Self.nobody
            $0.cgroup = target
        }
        #expect(status == .exited(0))
        let text = ProcFS.read(report) ?? ""
        #expect(text.contains("0::\(scratch.cgroupPath(of: cgroup.path))\n"), "\(text)")
        for attempt in ["thaw", "leave-to-parent", "leave-to-root", "make-inner"] {
            #expect(text.contains("\(attempt) 1") || text.contains("\(attempt) 2"), "\(attempt) succeeded: \(text)")
        }
        try waitUntilEmpty(cgroup)
        try cgroup.remove()
    }

    @Test("a spawn into a cgroup that fails is reported as before, its child reaped, the cgroup empty; a frozen cgroup is refused before any spawn",
          .enabled(if: ScratchCgroup.availableOrCI(.v2), "needs root and a cgroup2 mount"))
    func spawnFailuresAndFrozenCgroup() throws {
        let scratch = try ScratchCgroup(.v2)
        defer { #expect(scratch.tearDown() == []) }
        let cgroup = try scratch.freezer.makeAppCgroup(for: "failing")
        for join in [SpawnCgroup.Join.cloneIntoCgroup, .procsWrite] {
            var target = try cgroup.spawnTarget()
            target.join = join
            #expect(throws: Errno(ENOENT)) {
                _ = try spawn(SpawnRequest(arguments: ["/nonexistent/program"], environment: [], cgroup: target))
            }
            #expect(throws: Errno(ENOENT)) {
                _ = try spawn(SpawnRequest(arguments: ["/bin/true"], environment: [], workingDirectory: "/nonexistent", cgroup: target))
            }
        }
        #expect(try !cgroup.isPopulated())
        // Not a cgroup directory at all: clone3 says EBADF, the child's cgroup.procs ENOENT.
        let plain = try openFile("/tmp", flags: O_RDONLY | O_DIRECTORY)
        #expect(throws: Errno(EBADF)) {
            _ = try spawn(SpawnRequest(arguments: ["/bin/true"], environment: [], cgroup: SpawnCgroup(directory: plain.rawValue, join: .cloneIntoCgroup)))
        }
        #expect(throws: Errno(ENOENT)) {
            _ = try spawn(SpawnRequest(arguments: ["/bin/true"], environment: [], cgroup: SpawnCgroup(directory: plain.rawValue, join: .procsWrite)))
        }

        try cgroup.freeze()
        #expect(throws: Errno(EBUSY)) { _ = try cgroup.spawnTarget() }
        try cgroup.thaw()
        let target = try cgroup.spawnTarget()
        #expect(try runToEnd(["/bin/true"]) { $0.cgroup = target } == .exited(0))
        try waitUntilEmpty(cgroup)
        try cgroup.remove()
    }

    @Test("a restarted voipd finds the apps' cgroups; an empty one is taken over thawed, a populated one is refused and cannot be removed",
          .enabled(if: ScratchCgroup.availableOrCI(.v2), "needs root and a cgroup2 mount"))
    func takingOverCgroups() throws {
        let scratch = try ScratchCgroup(.v2)
        defer { #expect(scratch.tearDown() == []) }
        let freezer = scratch.freezer
        do {
            let empty = try freezer.makeAppCgroup(for: "empty")
            try empty.freeze()
            _ = try freezer.makeAppCgroup(for: "busy")
        }
        #expect(try freezer.appsWithCgroups() == ["busy", "empty"])
        let busy = try freezer.openAppCgroup(for: "busy")
        let sleeper = try spawn(SpawnRequest(arguments: ["/bin/sleep", "600"], environment: [], cgroup: try busy.spawnTarget()))
        defer {
            try? sleeper.send(SIGKILL)
            _ = try? sleeper.waitForExit()
        }
        #expect(throws: Errno(EBUSY)) { _ = try freezer.makeAppCgroup(for: "busy") }
        #expect(throws: Errno(EBUSY)) { try busy.remove() }
        let again = try freezer.makeAppCgroup(for: "empty")
        #expect(try !again.isFrozen())
        #expect(throws: Errno(EINVAL)) { _ = try freezer.makeAppCgroup(for: "../escape") }

        try busy.killAll()
        try waitUntilEmpty(busy)
        try busy.remove()
        try again.remove()
        #expect(try freezer.appsWithCgroups() == [])
    }

    @Test("without cgroup.kill (before Linux 5.14, and v1): frozen, each process killed through a pidfd, thawed",
          .enabled(if: ScratchCgroup.availableOrCI(.v2), "needs root and a cgroup2 mount"))
    func killingOneByOne() throws {
        let scratch = try ScratchCgroup(.v2)
        defer { #expect(scratch.tearDown() == []) }
        let cgroup = try scratch.freezer.makeAppCgroup(for: "shell")
        // A shell with two background children.
        let shell = try spawn(SpawnRequest(arguments: ["/bin/sh", "-c", "sleep 600 & sleep 600 & wait"], environment: currentEnvironment(),
                                           cgroup: try cgroup.spawnTarget()))
        try waitUntil("three processes in the cgroup") { try cgroup.processes().count == 3 }
        try cgroup.killOneByOne()
        #expect(waitReadable(shell.descriptor.rawValue, Deadline(.seconds(10))))
        #expect(try shell.waitForExit() == .killed(signal: SIGKILL, coreDumped: false))
        try waitUntilEmpty(cgroup)
        #expect(try !cgroup.isFrozen())
        try cgroup.remove()
    }
}
