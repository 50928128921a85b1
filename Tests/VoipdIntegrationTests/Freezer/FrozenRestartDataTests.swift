import Glibc
import Testing
import VoipClient
import VoipdProtocol
import VoipdSystem
import VoipdTestSupport

/// A frozen app whose VoIP socket got data while voipd was away (a call's INVITE during a
/// restart), the socket back from the service manager's store: the restarted voipd takes the
/// held socket back before it has decided about the frozen process, and the data must wake
/// that process, not start the app a second time (or kill it to make room in its cgroup).
@Suite("voipd with the cgroup freezer: data for a frozen app while voipd was away", .serialized)
struct FrozenRestartDataTests {
    @Test("voipd killed while an app is frozen, data arriving meanwhile, its socket in the service manager's store: the next voipd thaws the same process (no second launch, no kill), which connects again and reads the data, and is frozen again",
          .enabled(if: ScratchCgroup.availableOrCI(.v2), "needs root and a cgroup2 mount"))
    func dataWhileAwayThawsTheSameProcess() throws {
        try DaemonFreezerTests.withFrozenApp { rig, frozen in
            // The process is in the store beside its socket: the next voipd finds it there, frozen.
            try rig.manager.expect("FDSTORE=1 of phone/#process", context: rig.log) { $0.has("FDSTORE=1") && $0["FDNAME"] == "phone/#process" }
            try RestartRecoveryTests.crash(frozen.voipd)
            let (app, cgroup) = (frozen.app, frozen.cgroup)
            try frozen.remote.write("INVITE while voipd was away")
            let stored = try #require(rig.manager.store.first { $0.name == "phone/sip" }, "the socket is in the store")
            try waitUntil("the INVITE waits on the app's socket") { ((try? Socket.bytesAvailable(stored.descriptor.descriptor)) ?? 0) > 0 }
            #expect(DaemonFreezerTests.frozen(cgroup), "left frozen by the crash")

            let second = try RestartRecoveryTests.start(rig, passing: rig.manager.store.map { ($0.name, $0.descriptor.rawValue) },
                                                        arguments: frozen.arguments)
            try app.expect(.disconnected)
            #expect(try app.expect(\.reconnection).pid == app.pid, "the same process, not a relaunch")
            #expect(try app.expectRead("sip") == .data("INVITE while voipd was away"))
            let (control, follower) = try RestartRecoveryTests.controls(rig)
            #expect(try control.app("phone").pid == app.pid, "the app's process is the one taken back\n\(rig.log)")
            try control.waitUntil("phone", is: .suspended, follower: follower)
            try waitUntil("the app's cgroup is frozen again") { DaemonFreezerTests.frozen(cgroup) }

            #expect(try rig.terminate(second) == .exited(0))
            #expect(!DaemonFreezerTests.frozen(cgroup), "thawed as voipd stops")
        }
    }
}
