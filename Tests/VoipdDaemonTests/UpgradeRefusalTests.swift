import Glibc
import Testing
@testable import VoipdDaemon
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// A new program that cannot read the old one's snapshot (another format) refuses the
/// upgrade and exits; before it does, it leaves no app stopped, and none frozen either: the
/// old program may have frozen an app in its cgroup, where no SIGCONT reaches it.
@Suite("Upgrade refused: no app left stopped or frozen", .serialized)
struct UpgradeRefusalTests {
    @Test("a snapshot of another format: the app the old program froze is thawed in its cgroup, as a stopped one is continued",
          .enabled(if: StopsAwaitedTests.cgroupV2 != nil || runningUnderCI, "needs root and a cgroup2 mount"))
    func frozenAppThawed() throws {
        let mount = try #require(StopsAwaitedTests.cgroupV2)
        let path = mount.mountPoint + "/voipd-refusal-test-\(getpid())"
        #expect(mkdir(path, 0o755) == 0, "\(Errno.current("mkdir(\(path))"))")
        defer { #expect(rmdir(path) == 0, "\(path) left behind: \(Errno.current("rmdir"))") }
        let cgroup = try AppCgroup(path: path, version: .v2)
        let target = try cgroup.spawnTarget()
        let app = try TestProcess(["/bin/sleep", "600"]) { $0.cgroup = target }
        defer {
            app.stop()
            // v2 says when its last task has left (cgroup.events), before the rmdir above.
            #expect(Self.waitForEvents(of: cgroup) { (try? cgroup.isPopulated()) == false }, "\(path) still has a process")
        }
        try cgroup.freeze()
        #expect(Self.waitForEvents(of: cgroup) { (try? cgroup.isFrozen()) == true }, "\(path) is not frozen")

        // The pidfd's number goes in the snapshot, which owns it from then on.
        let pidfd = try PidFd(pid: app.pid).descriptor.duplicate().release()
        let snapshot = #"{"format": 5, "apps": [{"name": "phone", "process": {"pid": \#(app.pid), "pidfd": \#(pidfd), "isChild": false}, "processCgroup": {"path": "\#(path)", "version": "v2"}}]}"#
        let file = try FileDescriptor.memoryFile(named: "voipd-upgrade-test")
        try file.writeAll(Array(snapshot.utf8))
        try file.rewind()
        do {
            _ = try DaemonSnapshot.read(from: file)
            Issue.record("a snapshot of format 5 was read")
        } catch let refusal as UpgradeRefused {
            #expect(refusal.description.contains("1 apps resumed"), "\(refusal)")
        }
        #expect(try !cgroup.isFrozen(), "left frozen by the refused upgrade")
    }

    /// Waits until `condition` holds, woken by the cgroup's `cgroup.events` (10 s at most).
    static func waitForEvents(of cgroup: borrowing AppCgroup, until condition: () -> Bool) -> Bool {
        let deadline = MonotonicInstant.now + .seconds(10)
        while !condition() {
            guard MonotonicInstant.now < deadline else { return false }
            var watched = pollfd(fd: cgroup.stateFile.rawValue, events: Int16(POLLPRI), revents: 0)
            _ = poll(&watched, 1, 100)
        }
        return true
    }
}
