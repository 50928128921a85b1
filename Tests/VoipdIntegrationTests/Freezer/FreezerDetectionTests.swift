import CVoipd
import Glibc
import Testing
@testable import VoipdSystem

/// Finding where voipd may make cgroups: the kernel's tables parsed (hybrid, unified and
/// legacy machines, a container's bind-mounted subtree), and the choice made on this
/// machine's real hierarchies (configured directories, a delegated cgroup, one not delegated).
@Suite("freezer detection")
struct FreezerDetectionTests {
    /// Debian 12 on this kind of VM: v1 controllers on a tmpfs, v2 beside them.
    static let hybrid = """
        31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
        32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
        37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
        40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
        41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
        """
    static let unified = """
        22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
        35 25 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
        """
    static let legacy = """
        25 20 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
        30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
        31 25 0:27 / /sys/fs/cgroup/freezer rw,nosuid shared:12 - cgroup cgroup rw,freezer
        """
    /// A container: its cgroup, /system.slice/box.scope, shown as the mount's root.
    static let container = """
        500 400 0:30 /system.slice/box.scope /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw
        501 400 0:40 / /mnt/with\\040space rw - cgroup2 cgroup2 rw
        """

    @Test("mountinfo: cgroup2 and v1 mounts with their controllers, roots and escaped mount points")
    func mounts() {
        let hybrid = CgroupTables.mounts(mountInfo: Self.hybrid)
        #expect(hybrid.map(\.mountPoint) == ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/freezer", "/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"])
        #expect(hybrid.filter(\.isV1Freezer).map(\.mountPoint) == ["/sys/fs/cgroup/freezer"])
        #expect(hybrid.filter { $0.version == .v2 }.map(\.mountPoint) == ["/sys/fs/cgroup/unified"])
        #expect(CgroupTables.mounts(mountInfo: Self.unified) == [CgroupMount(version: .v2, mountPoint: "/sys/fs/cgroup", root: "/")])
        #expect(CgroupTables.mounts(mountInfo: Self.legacy).map(\.controllers) == [["rw", "cpu", "cpuacct"], ["rw", "freezer"]])
        let container = CgroupTables.mounts(mountInfo: Self.container)
        #expect(container.map(\.root) == ["/system.slice/box.scope", "/"])
        #expect(container.map(\.mountPoint) == ["/sys/fs/cgroup", "/mnt/with space"])
        #expect(CgroupTables.mounts(mountInfo: "garbage\n1 2 3\n - cgroup2\n") == [])
    }

    @Test("a cgroup path maps to a directory only under a mount that shows it")
    func directories() {
        let container = CgroupTables.mounts(mountInfo: Self.container)[0]
        #expect(container.directory(of: "/system.slice/box.scope") == "/sys/fs/cgroup")
        #expect(container.directory(of: "/system.slice/box.scope/app-a") == "/sys/fs/cgroup/app-a")
        #expect(container.directory(of: "/system.slice/box.scopeX") == nil)
        #expect(container.directory(of: "/") == nil)
        #expect(container.cgroupPath(of: "/sys/fs/cgroup/app-a") == "/system.slice/box.scope/app-a")
        #expect(container.cgroupPath(of: "/sys/fs/cgroupX") == nil)
    }

    @Test("/proc/PID/cgroup: the 0:: line and each v1 controller's path, colons in paths kept")
    func membership() {
        let text = "9:name=systemd:/\n6:freezer:/voipd/app-x\n1:cpu,cpuacct:/a:b\n0::/system.slice/voipd.service\n"
        let membership = CgroupTables.membership(text)
        #expect(membership.unified == "/system.slice/voipd.service")
        #expect(membership.legacy["freezer"] == "/voipd/app-x")
        #expect(membership.legacy["cpuacct"] == "/a:b")
        #expect(CgroupTables.membership("6:freezer:/\n").unified == nil)
    }

    @Test("nothing mounted: a reason for each version; the configured directory must be in a hierarchy")
    func nothingMounted() {
        let none = CgroupFreezer.detect(configuredDirectory: nil, instance: "voipd", mounts: [], membership: CgroupMembership())
        #expect(none == .unavailable(reason: "cgroup v2: no cgroup2 file system is mounted; cgroup v1: no freezer hierarchy"))
        guard case .unavailable(let reason) = CgroupFreezer.detect(configuredDirectory: "/tmp", instance: "voipd", mounts: CgroupTables.mounts(mountInfo: Self.hybrid),
                                                                    membership: CgroupMembership()) else {
            Issue.record("/tmp taken as a cgroup directory")
            return
        }
        #expect(reason == "cgroupDirectory /tmp is neither in the cgroup v2 hierarchy nor in cgroup v1's freezer hierarchy")
        #expect(CgroupFreezer.detect(configuredDirectory: "relative", instance: "voipd", mounts: [], membership: CgroupMembership())
                == .unavailable(reason: "cgroupDirectory relative is not an absolute path"))
    }

    @Test("the v2 cgroup voipd is in is used when systemd marked it delegated (user.delegate); otherwise the v1 freezer hierarchy, in a directory of the instance's own, and SIGSTOP without either",
          .enabled(if: ScratchCgroup.availableOrCI(.v2) && ScratchCgroup.availableOrCI(.v1), "needs root, cgroup2 and a cgroup v1 freezer mount"))
    func delegation() throws {
        let scratch = try ScratchCgroup(.v2)
        let legacy = try ScratchCgroup(.v1)
        defer {
            #expect(scratch.tearDown() == [])
            #expect(legacy.tearDown() == [])
        }
        let mounts = CgroupTables.current()!.mounts
        // As if voipd ran in the scratch cgroups (as a unit's main process runs in the unit's).
        let membership = CgroupMembership(unified: scratch.cgroupPath(of: scratch.path), legacy: ["freezer": legacy.cgroupPath(of: legacy.path)])
        let instance = CgroupFreezer.instanceName(forSocket: "/run/voipd.sock")
        #expect(instance == "run-voipd.sock")
        #expect(CgroupFreezer.detect(configuredDirectory: nil, instance: instance, mounts: mounts, membership: membership)
                == .available(CgroupFreezer(version: .v1, directory: legacy.path + "/voipd/run-voipd.sock", origin: .legacyHierarchy)),
                "a v2 cgroup not delegated is not used; the v1 freezer is")
        var info = stat()
        #expect(stat(legacy.path + "/voipd/run-voipd.sock/freezer.state", &info) == 0, "a cgroup of the freezer hierarchy")

        // Without a v1 freezer hierarchy: SIGSTOP, and why.
        let v2Only = mounts.filter { !$0.isV1Freezer }
        guard case .unavailable(let reason) = CgroupFreezer.detect(configuredDirectory: nil, instance: instance, mounts: v2Only, membership: membership) else {
            Issue.record("a cgroup not delegated was used")
            return
        }
        #expect(reason.hasPrefix("cgroup v2: voipd's cgroup \(membership.unified!) (\(scratch.path)) is not delegated to it"), "\(reason)")
        #expect(reason.hasSuffix("; cgroup v1: the freezer hierarchy is not mounted here"), "\(reason)")

        // What systemd (>= 252) does for Delegate=yes: the delegated v2 cgroup comes first.
        try #require(setxattr(scratch.path, "user.delegate", "1", 1, 0) == 0, "\(Errno.current("setxattr"))")
        #expect(CgroupFreezer.detect(configuredDirectory: nil, instance: instance, mounts: mounts, membership: membership)
                == .available(CgroupFreezer(version: .v2, directory: scratch.path, origin: .delegated)))
    }

    @Test("instance names: a control socket's path as one path component, escaped as systemd escapes paths")
    func instanceNames() {
        #expect(CgroupFreezer.instanceName(forSocket: "/run/voipd.sock") == "run-voipd.sock")
        #expect(CgroupFreezer.instanceName(forSocket: "/tmp/voipd-test.AbC/voipd.sock") == "tmp-voipd\\x2dtest.AbC-voipd.sock")
        #expect(CgroupFreezer.instanceName(forSocket: "//a//.b c/") == "a-.b\\x20c")
        #expect(CgroupFreezer.instanceName(forSocket: "/") == "-")
        #expect(!CgroupFreezer.instanceName(forSocket: "/x/../y").contains("/"))
    }

    @Test("an instance name never exceeds a file name's 255 bytes: a long socket path's is its escaped start, ~ and a digest of the whole (one name per socket, the same in every run); one that fits is as before")
    func longInstanceNames() {
        let dashes = String(repeating: "-", count: 80)
        let long = CgroupFreezer.instanceName(forSocket: "/run/user/100/\(dashes)/voipd.sock")
        // The escaped path is 345 bytes; the cut falls inside an escape, which goes whole.
        #expect(long == "run-user-100-" + String(repeating: "\\x2d", count: 56) + "~449a84a46b4d9066")
        #expect(long.utf8.count <= 255)
        #expect(CgroupFreezer.instanceName(forSocket: "//run/user//100/\(dashes)/voipd.sock/") == long, "the same socket, written otherwise")
        let other = CgroupFreezer.instanceName(forSocket: "/run/user/100/\(dashes)/voipd.sack")
        #expect(other != long && other.hasPrefix("run-user-100-\\x2d") && other.utf8.count <= 255, "the end of the path tells them apart")
        let fits = "/r/" + String(repeating: "-", count: 62)
        #expect(CgroupFreezer.instanceName(forSocket: fits) == "r-" + String(repeating: "\\x2d", count: 62), "250 bytes: escaped as before")
        #expect(!CgroupFreezer.instanceName(forSocket: "/run/a~b").contains("~"), "a ~ of a short path is escaped")
    }

    @Test("a configured directory is made if missing, in whichever hierarchy holds it",
          .enabled(if: ScratchCgroup.availableOrCI(.v2) && ScratchCgroup.availableOrCI(.v1), "needs root, cgroup2 and a cgroup v1 freezer mount"))
    func configured() throws {
        for version in [CgroupVersion.v2, .v1] {
            let scratch = try ScratchCgroup(version)
            defer { #expect(scratch.tearDown() == []) }
            let directory = scratch.path + "/voipd"
            #expect(CgroupFreezer.detect(configuredDirectory: directory, instance: "voipd") == .available(CgroupFreezer(version: version, directory: directory, origin: .configured)))
            var info = stat()
            #expect(stat(directory, &info) == 0 && info.st_mode & 0o777 == 0o755)
        }
    }

    @Test("this machine: the backend found (or why none), as voipd's status will say it")
    func thisMachine() {
        // Whatever the machine, an answer with a reason; printed for the record.
        switch CgroupFreezer.detect(instance: "voipd-tests-\(getpid())") {
        case .available(let freezer):
            print("freezer: \(freezer)")
            // Not left behind in the machine's hierarchy.
            freezer.removeInstanceDirectory()
        case .unavailable(let reason): #expect(!reason.isEmpty); print("no freezer: \(reason)")
        }
    }

    @Test("the confirmation schedule: 50 µs doubling, v2 hands over to the notification after 8 re-reads, v1 goes on at 100 ms at most")
    func confirmationSchedule() {
        var v2 = FreezeConfirmation(version: .v2)
        var delays: [Duration] = []
        while let delay = v2.nextDelay() { delays.append(delay) }
        #expect(delays == [50, 100, 200, 400, 800, 1600, 3200, 6400].map { Duration.microseconds($0) })
        #expect(v2.watchesNotification)
        var v1 = FreezeConfirmation(version: .v1)
        let first = (0..<20).compactMap { _ in v1.nextDelay() }
        #expect(first.count == 20 && first[11] == .milliseconds(100) && first[19] == .milliseconds(100) && first[10] == .microseconds(51200))
        #expect(!v1.watchesNotification)
    }
}
