import CVoipd
import Foundation
import Glibc
import Testing
import VoipClient
import VoipdProtocol
import VoipdSystem
import VoipdTestSupport

/// voipd suspending a launched app with the cgroup freezer (`cgroupDirectory` naming a
/// scratch cgroup): the app starts in its cgroup, is frozen rather than stopped, a stray
/// SIGCONT does not resume it, data wakes it, an in-place upgrade finds its cgroup again,
/// and its end removes the cgroup. Nothing is left frozen or behind.
@Suite("voipd with the cgroup freezer", .serialized)
struct DaemonFreezerTests {
    /// Whether every task of the cgroup is frozen: `frozen 1` in v2's `cgroup.events`, `FROZEN`
    /// in v1's `freezer.state`.
    static func frozen(_ cgroup: String, _ version: CgroupVersion = .v2) -> Bool {
        switch version {
        case .v2: return (ProcFS.read(cgroup + "/cgroup.events") ?? "").split(separator: "\n").contains("frozen 1")
        case .v1: return (ProcFS.read(cgroup + "/freezer.state") ?? "").hasPrefix("FROZEN")
        }
    }

    @Test("a launched app is frozen whole in its own cgroup, ignores a stray SIGCONT, wakes on data, keeps its cgroup across an upgrade, and its cgroup goes with it",
          .enabled(if: ScratchCgroup.availableOrCI(.v2), "needs root and a cgroup2 mount"))
    func freezesLaunchedApp() throws {
        try freezesLaunchedApp(.v2)
    }

    @Test("cgroup v1's freezer hierarchy: the same story with freezer.state (FROZEN, tasks in D), confirmed by re-reads",
          .enabled(if: ScratchCgroup.availableOrCI(.v1), "needs root and a mounted cgroup v1 freezer hierarchy"))
    func freezesLaunchedAppV1() throws {
        try freezesLaunchedApp(.v1)
    }

    func freezesLaunchedApp(_ version: CgroupVersion) throws {
        try Self.withFreezerDaemon(version) { harness, scratch, _ in
            let backend = "cgroup \(version.rawValue) freezer"
            #expect(harness.log.contains("\(backend) in \(scratch.path)/voipd"), "\(harness.log)")

            // It keeps each wake open (no ack) so the test sees it running.
            let (app, remote) = try harness.launchAppWithVoIPSocket("phone", ["--no-ack", "voipSocketReadable"])
            let cgroup = scratch.path + "/voipd/app-phone"
            #expect(try harness.status("phone").suspension == backend)
            let membership = version == .v2 ? "0::" : "freezer:"
            #expect((ProcFS.read("/proc/\(app.pid)/cgroup") ?? "").contains("\(membership)\(scratch.cgroupPath(of: cgroup))\n"))

            try harness.suspend(app)
            #expect(Self.frozen(cgroup, version))
            #expect(processState(app.pid) == (version == .v2 ? "S" : "D"), "frozen, not stopped")

            // Someone else's SIGCONT resumes nothing: voipd's record and the kernel's agree.
            #expect(try runToEnd(["/bin/kill", "-CONT", "\(app.pid)"]) == .exited(0))
            observe(for: .milliseconds(100))
            #expect(Self.frozen(cgroup, version))
            #expect(try harness.status("phone").state == .suspended)

            for when in ["before", "after"] {
                if when == "after" {
                    // The new program reopens the cgroup it finds the app in.
                    _ = try harness.control.upgrade()
                    #expect(try harness.status("phone").suspension == backend)
                    #expect(Self.frozen(cgroup, version), "still frozen across the upgrade")
                }
                let invite = "INVITE \(when) the upgrade"
                try remote.write(invite)
                let event = try app.expectEvent(.voipSocketReadable)
                #expect(try app.expectRead("sip") == .data(invite))
                #expect(!Self.frozen(cgroup, version), "thawed for the wake")
                try app.send(.acknowledge(eventID: event.id))
                try harness.waitForState("phone", .suspended)
                #expect(Self.frozen(cgroup, version), "voipd says suspended once the freeze is confirmed")
            }

            // Its end (a SIGKILL while frozen: cgroup.kill) takes the cgroup with it.
            try harness.control.command(.kill, "phone")
            try harness.waitForState("phone", .terminated)
            try waitUntil("the app's cgroup is removed") { access(cgroup, F_OK) != 0 }
            #expect(try harness.status("phone").suspension == nil)
        }
    }

    @Test("suspension auto where voipd's cgroup v2 is not delegated (a hybrid machine, voipd outside systemd): the cgroup v1 freezer, in a directory of this voipd's own, removed as voipd stops",
          .enabled(if: ScratchCgroup.availableOrCI(.v1) && ScratchCgroup.availableOrCI(.v2), "needs root, cgroup2 and a mounted cgroup v1 freezer hierarchy"))
    func autoFallsBackToV1() throws {
        try autoFallsBackToV1(socketName: "voipd.sock")
    }

    @Test("the same with a control socket whose path, escaped, is longer than a file name (each dash takes four bytes): the v1 freezer still, in a directory whose name fits, not SIGSTOP after a failed mkdir",
          .enabled(if: ScratchCgroup.availableOrCI(.v1) && ScratchCgroup.availableOrCI(.v2), "needs root, cgroup2 and a mounted cgroup v1 freezer hierarchy"))
    func autoFallsBackToV1WithALongSocketPath() throws {
        try autoFallsBackToV1(socketName: Self.longSocketName)
    }

    /// /tmp/voipd-test.XXXXXX/ and this: a socket's longest path (107 bytes), 346 escaped.
    static let longSocketName = String(repeating: "-", count: 79) + ".sock"

    @Test("a voipd whose instance name is cut finds the directory a voipd of before the cut made under the whole escaped path (cgroupfs takes names past 255 bytes): a process left frozen in an app cgroup there is thawed at start, an empty app cgroup removed",
          .enabled(if: ScratchCgroup.availableOrCI(.v1) && ScratchCgroup.availableOrCI(.v2), "needs root, cgroup2 and a mounted cgroup v1 freezer hierarchy"))
    func formerInstanceDirectory() throws {
        let tables = try #require(CgroupTables.current())
        let freezerPath = try #require(tables.membership.legacy["freezer"])
        let own = try #require(tables.mounts.first { $0.isV1Freezer && $0.directory(of: freezerPath) != nil }?.directory(of: freezerPath))
        var former = ""
        var sleeper: TestProcess?
        defer {
            // A frozen v1 task dies only once thawed.
            if !former.isEmpty { _ = try? AppCgroup(path: former + "/app-old", version: .v1).thaw() }
            sleeper?.stop()
            for path in [former + "/app-old", former + "/app-gone", former, own + "/voipd"] where !former.isEmpty { rmdir(path) }
        }
        let configuration = try makeTemporaryDirectory("voipd-freezer-config")
        defer { removeTree(configuration) }
        // What a voipd of before the cut left: its directory under the whole name, an app's
        // cgroup there with a process frozen in it, and another app's, empty.
        let harness = try DaemonHarness(arguments: ["--config", try Self.configuration(#"{"suspension": "auto"}"#, in: configuration, named: "auto.json")],
                                        socketName: Self.longSocketName, prepare: { socketPath in
            former = own + "/voipd/" + (try #require(CgroupFreezer.formerInstanceName(forSocket: socketPath)))
            for path in [own + "/voipd", former, former + "/app-old", former + "/app-gone"] {
                guard mkdir(path, 0o755) == 0 || errno == EEXIST else { throw Errno.current("mkdir(\(path))") }
            }
            let cgroup = try AppCgroup(path: former + "/app-old", version: .v1)
            let target = try cgroup.spawnTarget()
            sleeper = try TestProcess(["/bin/sleep", "1000"]) { $0.cgroup = target }
            try cgroup.freeze()
            _ = try waitUntilFrozen(cgroup)
        })
        defer { harness.stop() }
        #expect(former.utf8.count - own.utf8.count > 255 + 7, "the name of before is past NAME_MAX")
        #expect(harness.log.contains("cgroup \(former)/app-old has processes voipd does not know: thawed, left alone"), "\(harness.log)")
        #expect(!Self.frozen(former + "/app-old", .v1))
        #expect(access(former + "/app-gone", F_OK) != 0, "the empty app cgroup is removed")
        let name = CgroupFreezer.instanceName(forSocket: harness.socketPath)
        #expect(harness.log.contains("cgroup v1 freezer in \(own)/voipd/\(name) (legacyHierarchy)"), "its own directory is the cut name's")
    }

    func autoFallsBackToV1(socketName: String) throws {
        let tables = try #require(CgroupTables.current())
        if let unified = tables.membership.unified, let mount = tables.mounts.first(where: { $0.version == .v2 && $0.directory(of: unified) != nil }),
           let own = mount.directory(of: unified), getxattr(own, "user.delegate", nil, 0) > 0 {
            // Under systemd with Delegate=yes the delegated cgroup comes first, as it should.
            print("skipped: this test runs in a delegated cgroup v2 cgroup (\(own))")
            return
        }
        let freezerPath = try #require(tables.membership.legacy["freezer"])
        let own = try #require(tables.mounts.first { $0.isV1Freezer && $0.directory(of: freezerPath) != nil }?.directory(of: freezerPath))
        let directory = try makeTemporaryDirectory("voipd-freezer-config")
        defer { removeTree(directory) }
        let harness = try DaemonHarness(arguments: ["--config", try Self.configuration(#"{"suspension": "auto"}"#, in: directory, named: "auto.json")],
                                        socketName: socketName)
        let name = CgroupFreezer.instanceName(forSocket: harness.socketPath)
        #expect(name.utf8.count <= 255)
        let instance = own + "/voipd/" + name
        let cgroup = instance + "/app-phone"
        defer {
            harness.stop()
            #expect(access(instance, F_OK) != 0, "voipd's directory \(instance) is left behind")
        }
        #expect(harness.log.contains("cgroup v1 freezer in \(instance) (legacyHierarchy)"), "\(harness.log)")

        let (app, remote) = try harness.launchAppWithVoIPSocket("phone")
        #expect(try harness.status("phone").suspension == "cgroup v1 freezer")
        try harness.suspend(app)
        #expect(Self.frozen(cgroup, .v1))
        #expect(processState(app.pid) == "D", "frozen by v1's freezer, not stopped")

        try remote.write("INVITE")
        _ = try app.expectEvent(.voipSocketReadable)
        #expect(try app.expectRead("sip") == .data("INVITE"))
        try harness.waitForState("phone", .suspended)
        #expect(Self.frozen(cgroup, .v1))

        try harness.control.command(.kill, "phone")
        try harness.waitForState("phone", .terminated)
        try waitUntil("the app's cgroup is removed") { access(cgroup, F_OK) != 0 }
    }

    @Test("a frozen app killed from outside ends; data relaunches it into its app's cgroup, with its socket and the data, and it is frozen again",
          .enabled(if: ScratchCgroup.availableOrCI(.v2), "needs root and a cgroup2 mount"))
    func relaunchAfterAKillWhileFrozen() throws {
        try Self.withFreezerDaemon(.v2) { harness, scratch, directory in
            let (app, remote) = try harness.launchAppWithVoIPSocket("phone")
            try harness.suspend(app)
            let cgroup = scratch.path + "/voipd/app-phone"
            #expect(Self.frozen(cgroup))
            // A frozen task still takes SIGKILL.
            kill(app.pid, SIGKILL)
            try harness.waitForState("phone", .terminated)

            try remote.write("INVITE")
            let relaunched = try harness.acceptApp("phone")
            #expect(relaunched.pid != app.pid)
            #expect(relaunched.hello?.restored == ["sip"])
            #expect((ProcFS.read("/proc/\(relaunched.pid)/cgroup") ?? "").contains("0::\(scratch.cgroupPath(of: cgroup))\n"), "started in its app's cgroup")
            _ = try relaunched.expectEvent(.voipSocketReadable)
            #expect(try relaunched.expectRead("sip") == .data("INVITE"))
            try harness.waitForState("phone", .suspended)
            #expect(Self.frozen(cgroup))
            #expect(processState(relaunched.pid) == "S", "frozen, not stopped")
            #expect(try harness.status("phone").launches == 2)
        }
    }

    @Test("a freeze the kernel completes only after voipd's re-reads (a thread inside a long madvise) is confirmed by cgroup.events' EPOLLPRI in voipd's loop",
          .enabled(if: ScratchCgroup.availableOrCI(.v2) && (toolExists(SlowToFreeze.python) || runningUnderCI), "needs root, a cgroup2 mount and python3"))
    func slowFreezeConfirmedByNotification() throws {
        try Self.withFreezerDaemon(.v2) { harness, scratch, directory in
            let output = directory + "/populate.out"
            let file = try openFile(output, flags: O_WRONLY | O_CREAT | O_APPEND)
            _ = try harness.control.launch(SlowToFreeze.command(), name: "populate", speaksProtocol: false, output: file.rawValue)
            try waitForText("populating", in: output)
            let cgroup = scratch.path + "/voipd/app-populate"

            // The thread freezes as its madvise returns, which voipd's ~13 ms of re-reads catch
            // in about one round of six on a quiet machine (a populate takes ~75 ms there): such
            // a round says nothing of the notification, so it is thawed and tried again.
            let waiting = "populate: freeze not done after \(FreezeConfirmation.v2Rereads) looks; waiting for the kernel's notification"
            for round in 1...12 {
                _ = try harness.control.command(.background, "populate")
                try harness.waitForState("populate", .suspended)
                #expect(Self.frozen(cgroup), "voipd says suspended once the kernel says frozen (round \(round))")
                if harness.log.contains(waiting) { break }
                try harness.control.command(.foreground, "populate")
                try harness.waitForState("populate", .active)
            }
            #expect(harness.log.contains(waiting),
                    "every freeze of 12 was confirmed before the re-reads ended: the notification was never what confirmed one\n\(harness.log.suffix(3000))")
        }
    }

    /// A voipd with the freezer in a scratch cgroup of `version`, for `body`; everything torn
    /// down after it, and the test fails if a cgroup is left behind.
    static func withFreezerDaemon(_ version: CgroupVersion, _ body: (DaemonHarness, ScratchCgroup, _ directory: String) throws -> Void) throws {
        let scratch = try ScratchCgroup(version)
        let directory = try makeTemporaryDirectory("voipd-freezer-config")
        defer {
            removeTree(directory)
            #expect(scratch.tearDown() == [], "cgroups left behind")
        }
        let harness = try DaemonHarness(arguments: ["--config", try freezerConfiguration(in: directory, scratch)])
        defer { harness.stop() }
        try body(harness, scratch, directory)
    }

    /// A configuration file in `directory` with the freezer's directory under `scratch`.
    static func freezerConfiguration(in directory: String, _ scratch: ScratchCgroup) throws -> String {
        try configuration(#"{"suspension": "freezer", "cgroupDirectory": "\#(scratch.path)/voipd"}"#, in: directory, named: "freezer.json")
    }

    /// A configuration file `name` in `directory` with `json` in it; returns its path.
    static func configuration(_ json: String, in directory: String, named name: String) throws -> String {
        let path = directory + "/" + name
        try openFile(path, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644).writeAll(Array(json.utf8))
        return path
    }

    /// A voipd of a `ServiceRig`'s with the freezer in a scratch cgroup v2 directory, and its
    /// app `phone` launched with a held socket `sip` (in the service manager's store) and frozen.
    struct FrozenApp {
        let voipd: TestProcess
        let app: TestAppHandle
        let remote: PeerConnection
        /// The app's cgroup.
        let cgroup: String
        /// voipd's arguments besides the rig's (its configuration).
        let arguments: [String]

        /// Kills voipd (nothing thaws the app), once the service manager's store has the
        /// app's process if the test passes the store to the next voipd.
        func crash(_ rig: ServiceRig, withStore: Bool) throws {
            if withStore {
                try rig.manager.expect("FDSTORE=1 of phone/#process", context: rig.log) { $0.has("FDSTORE=1") && $0["FDNAME"] == "phone/#process" }
            }
            try RestartRecoveryTests.crash(voipd)
        }
    }

    /// Runs `body` with a rig and its ``FrozenApp``; everything is torn down after it, voipd's log is shown
    /// if it throws, and the test fails if a cgroup is left behind. voipd gets `extraArguments`
    /// too; `prepare` runs with the app before it is frozen.
    static func withFrozenApp(extraArguments: [String] = [], prepare: (TestAppHandle) throws -> Void = { _ in },
                              _ body: (ServiceRig, FrozenApp) throws -> Void) throws {
        let scratch = try ScratchCgroup(.v2)
        let rig = try ServiceRig()
        defer {
            rig.stop()
            #expect(scratch.tearDown() == [], "cgroups left behind")
        }
        do {
            let arguments = ["--config", try freezerConfiguration(in: rig.directory, scratch)] + extraArguments
            let peer = try TCPPeer()
            let voipd = try RestartRecoveryTests.start(rig, arguments: arguments)
            let (control, follower) = try RestartRecoveryTests.controls(rig)
            let (app, remotes) = try RestartRecoveryTests.launch(rig, control, "phone", sockets: ["sip"], peer: peer)
            try rig.manager.expect("FDSTORE=1 of phone/sip", context: rig.log) { $0.has("FDSTORE=1") && $0["FDNAME"] == "phone/sip" }
            try prepare(app)
            try RestartRecoveryTests.suspend("phone", control, follower)
            let cgroup = scratch.path + "/voipd/app-phone"
            try waitUntil("the app's cgroup is frozen") { frozen(cgroup) }
            try body(rig, FrozenApp(voipd: voipd, app: app, remote: remotes["sip"]!, cgroup: cgroup, arguments: arguments))
        } catch {
            Issue.record("voipd's log ends:\n\(rig.log.split(separator: "\n").suffix(40).joined(separator: "\n"))")
            throw error
        }
    }

    @Test("voipd killed while an app is frozen, and the app's socket not to be found again (the state file names an inode the app does not hold): the next voipd thaws the app, which connects again and registers its socket; it is suspended again by the freezer, and thawed when voipd stops",
          .enabled(if: ScratchCgroup.availableOrCI(.v2), "needs root and a cgroup2 mount"))
    func crashThawsFrozenAppWithoutItsSocket() throws {
        try Self.withFrozenApp { rig, frozen in
            let (app, cgroup) = (frozen.app, frozen.cgroup)
            // voipd dies: nothing thaws the app, and data arrives for it meanwhile.
            try RestartRecoveryTests.crash(frozen.voipd)
            #expect(Self.frozen(cgroup), "left frozen by the crash")
            try frozen.remote.write("INVITE while voipd was away")
            // As if the app had given voipd its only descriptor of the socket.
            let statePath = rig.directory + "/voipd.state"
            var state = try PlantedStateFile.read(statePath)
            var apps = try #require(state["apps"] as? [[String: Any]])
            let index = try #require(apps.firstIndex { $0["name"] as? String == "phone" })
            apps[index]["sockets"] = [["name": "sip", "kind": "tcp", "origin": "registered", "inode": 1]]
            state["apps"] = apps
            try PlantedStateFile.write(try JSONSerialization.data(withJSONObject: state), to: statePath)

            let second = try RestartRecoveryTests.start(rig, arguments: frozen.arguments)
            #expect(rig.log.contains("phone: pid \(app.pid) was left suspended, but voipd could not get back its VoIP sockets sip: resumed, to register them again"), "\(rig.log)")
            #expect(rig.log.contains("phone: pid \(app.pid) still running from before voipd started; it was stopped: resumed"), "\(rig.log)")
            try app.expect(.disconnected)
            let back = try app.expect(\.reconnection)
            #expect(back.pid == app.pid, "the same process, not a relaunch")
            #expect(back.registered == ["sip"])
            #expect(try app.expectRead("sip") == .data("INVITE while voipd was away"))
            let (control, follower) = try RestartRecoveryTests.controls(rig)
            #expect(try control.app("phone").suspension == "cgroup v2 freezer")
            // Back in the background, frozen by the new voipd.
            try control.waitUntil("phone", is: .suspended, follower: follower)
            try waitUntil("the app's cgroup is frozen by the new voipd") { Self.frozen(cgroup) }

            // Stopping, voipd thaws every app it froze: none is left frozen with no one to thaw it.
            #expect(try rig.terminate(second) == .exited(0))
            #expect(!Self.frozen(cgroup))
        }
    }

    @Test("voipd killed while an app is frozen: the next voipd gets its held socket back (from the service manager's store, or, with the state file alone, copied from the app by its inode) and keeps the app frozen (none of its threads runs across the restart); data wakes it then; it connects again, finds its own socket held, reads, and is frozen again",
          .enabled(if: ScratchCgroup.availableOrCI(.v2), "needs root and a cgroup2 mount"), arguments: [true, false])
    func restartKeepsFrozenApp(withStore: Bool) throws {
        try Self.withFrozenApp { rig, frozen in
            let (app, cgroup) = (frozen.app, frozen.cgroup)
            let ranBefore = cpuNanoseconds(ofCgroup: cgroup)
            try frozen.crash(rig, withStore: withStore)
            let stored = withStore ? rig.manager.store.map { ($0.name, $0.descriptor.rawValue) } : []
            let second = try RestartRecoveryTests.start(rig, passing: stored, arguments: frozen.arguments)
            #expect(rig.log.contains("phone: holding VoIP sockets sip again, copied from its processes") == !withStore, "\(rig.log)")
            #expect(rig.log.contains("phone: pid \(app.pid) still running from before voipd started, frozen in \(cgroup): kept frozen; its 1 held sockets wake it"),
                    "\(rig.log)")
            let (control, follower) = try RestartRecoveryTests.controls(rig)
            let status = try control.app("phone")
            #expect(status.state == .suspended && status.suspension == "cgroup v2 freezer" && status.pid == app.pid)
            #expect(Self.frozen(cgroup), "never thawed")
            #expect(cpuNanoseconds(ofCgroup: cgroup) == ranBefore, "a thread of the app ran across the restart")

            // Data wakes it: it finds voipd gone, connects to the new one, and is told.
            try frozen.remote.write("INVITE after the restart")
            try app.expect(.disconnected)
            let back = try app.expect(\.reconnection)
            #expect(back.pid == app.pid, "the same process, not a relaunch")
            #expect(back.registered == ["sip"] && back.restored == [], "its own socket, held again: \(back)")
            #expect(try app.expectRead("sip") == .data("INVITE after the restart"))
            #expect(rig.log.components(separatedBy: "phone: holding VoIP socket sip (tcp)\n").count == 2, "registered once, with the first voipd\n\(rig.log)")
            try control.waitUntil("phone", is: .suspended, follower: follower)
            try waitUntil("the app's cgroup is frozen again") { Self.frozen(cgroup) }
            #expect(try control.app("phone").launches == 0, "taken back, never launched by this voipd")

            #expect(try rig.terminate(second) == .exited(0))
            #expect(!Self.frozen(cgroup), "thawed as voipd stops")
        }
    }

    @Test("voipd killed while an app is frozen, started again configured for signals: the state file's record of the cgroup is where the app is kept frozen (found by the state file alone, or by the fd store's process with the state file's list of sockets); data thaws it there; it keeps its cgroup and is frozen there again; nothing stays frozen",
          .enabled(if: ScratchCgroup.availableOrCI(.v2), "needs root and a cgroup2 mount"), arguments: [false, true])
    func restartForSignalsKeepsFrozenByRecord(withStore: Bool) throws {
        try Self.withFrozenApp { rig, frozen in
            let (app, cgroup) = (frozen.app, frozen.cgroup)
            try frozen.crash(rig, withStore: withStore)

            // The new voipd has no freezer of its own: only the record says where the app is
            // frozen. The store's record and process only: the socket is copied from the app.
            let signals = try Self.configuration(#"{"suspension": "signal"}"#, in: rig.directory, named: "signals.json")
            let stored = withStore ? rig.manager.store.filter { $0.name.hasSuffix("/#process") || $0.name.hasSuffix("/#record") }
                .map { ($0.name, $0.descriptor.rawValue) } : []
            let second = try RestartRecoveryTests.start(rig, passing: stored, arguments: ["--config", signals])
            #expect(rig.log.contains("suspension by SIGSTOP"), "\(rig.log)")
            #expect(rig.log.contains("phone: pid \(app.pid) still running from before voipd started, frozen in \(cgroup): kept frozen; its 1 held sockets wake it"), "\(rig.log)")
            #expect(Self.frozen(cgroup), "kept frozen by the record")
            let (control, follower) = try RestartRecoveryTests.controls(rig)
            #expect(try control.app("phone").suspension == "cgroup v2 freezer", "an app keeps the backend it was started with")

            try frozen.remote.write("INVITE after the restart")
            try app.expect(.disconnected)
            #expect(try app.expect(\.reconnection).pid == app.pid, "the same process")
            #expect(try app.expectRead("sip") == .data("INVITE after the restart"))
            try control.waitUntil("phone", is: .suspended, follower: follower)
            try waitUntil("the app's cgroup is frozen again") { Self.frozen(cgroup) }
            #expect(try rig.terminate(second) == .exited(0))
            #expect(!Self.frozen(cgroup), "thawed as voipd stops")
        }
    }

    @Test("suspension \"freezer\" where voipd cannot use it: voipd does not start, and says why")
    func freezerRequiredButUnavailable() throws {
        let directory = try makeTemporaryDirectory("voipd-freezer-config")
        defer { removeTree(directory) }
        let configuration = directory + "/voipd.json"
        let file = try openFile(configuration, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
        // A directory that is in no cgroup hierarchy.
        try file.writeAll(Array(#"{"suspension": "freezer", "cgroupDirectory": "\#(directory)/cgroups"}"#.utf8))
        let result = try runCommand([Binaries.voipd, "--config", configuration, "--socket", directory + "/voipd.sock", "--no-memory-pressure-trigger"])
        #expect(result.status == 78, "EX_CONFIG expected: \(result.output)")
        #expect(result.output.contains("suspension") && result.output.contains("neither in the cgroup v2 hierarchy"), "\(result.output)")
    }
}
