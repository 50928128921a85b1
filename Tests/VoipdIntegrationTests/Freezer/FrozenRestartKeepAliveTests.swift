import Glibc
import Testing
import VoipdTestSupport

/// A frozen softphone that refreshes its SIP registration in its keep-alive handler
/// (setKeepAliveTimeout, iOS's model), kept frozen across voipd's crash and restart: the new
/// voipd must go on waking it, or its registration lapses and no INVITE reaches it again.
@Suite("voipd with the cgroup freezer: a kept-frozen app's keep-alive across voipd's restart", .serialized)
struct FrozenRestartKeepAliveTests {
    @Test("voipd killed while an app with a keep-alive is frozen, its socket in the service manager's store: the next voipd keeps it frozen with its keep-alive; with no data at all, the keep-alive wakes it, it connects again, its handler runs, and it is frozen again",
          .enabled(if: ScratchCgroup.availableOrCI(.v2), "needs root and a cgroup2 mount"))
    func keptFrozenKeepsItsKeepAlive() throws {
        try DaemonFreezerTests.withFrozenApp(extraArguments: ["--timing", "keepAliveMinimum=2"], prepare: { app in
            // 80 s of the app's, 8 s at the rig's time scale (0.1): long enough that the first
            // voipd does not wake it between its freeze and the crash (the test needs it
            // frozen then); due 8 s after this, by either voipd.
            try app.send(.keepAlive(seconds: 80))
            try app.expect(.keepAliveSet)
        }) { rig, frozen in
            let (app, cgroup) = (frozen.app, frozen.cgroup)
            try rig.manager.expect("FDSTORE=1 of phone/#process", context: rig.log) { $0.has("FDSTORE=1") && $0["FDNAME"] == "phone/#process" }
            try RestartRecoveryTests.crash(frozen.voipd)
            #expect(DaemonFreezerTests.frozen(cgroup), "left frozen by the crash")

            let second = try RestartRecoveryTests.start(rig, passing: rig.manager.store.map { ($0.name, $0.descriptor.rawValue) },
                                                        arguments: frozen.arguments)
            #expect(rig.log.contains("phone: pid \(app.pid) still running from before voipd started, frozen in \(cgroup): kept frozen"), "\(rig.log)")
            let (control, follower) = try RestartRecoveryTests.controls(rig)
            #expect(try control.app("phone").keepAliveSeconds == 80, "the keep-alive taken back with the process")

            try RestartRecoveryTests.expectWokenByKeepAliveOnly(app, "phone", control, follower)
            try waitUntil("the app's cgroup is frozen again") { DaemonFreezerTests.frozen(cgroup) }

            #expect(try rig.terminate(second) == .exited(0))
            #expect(!DaemonFreezerTests.frozen(cgroup), "thawed as voipd stops")
        }
    }
}
