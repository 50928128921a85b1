import Foundation
import Glibc
import Testing
@testable import VoipdDaemon
import VoipdAdoption
import VoipdConfiguration
import VoipdLifecycle
import VoipdSystem
import VoipdVocabulary

/// One turn of the daemon's loop (``Daemon/turn()``), run by hand on a daemon in this process.
@Suite("The loop's turn", .serialized)
struct LoopTurnTests {
    @Test("a wake's bookkeeping settled when the loop's bounded wait runs out (the woken program said nothing) has what it raised performed in the same turn: an adopted program's keep-alive is set then, not whenever some later event comes")
    func boundedWaitDrainsWhatTheSettleRaised() throws {
        try withDaemonInProcess { daemon in
            let app = try startedApp(daemon, name: "baresip", inBackground: true)
            let process = try #require(app.process)
            defer { if app.process != nil { _ = try? process.pidfd.send(SIGKILL); _ = try? process.pidfd.waitForExit() } }
            // Adopted after its launch: the next batch of its actions gives it its keep-alive.
            daemon.setAdoption(AdoptionSettings(policy: try AdoptionPolicy(parsing: ["sip"])), of: app)
            #expect(app.lifecycle.keepAliveInterval == nil)

            // A wake's bookkeeping owed since long enough that the loop's wait does not block;
            // nothing else is ready.
            daemon.apps.wakeBookkeeping.append(WakeBookkeeping(app: app.id, actions: [], continuedAt: wallClockSeconds(),
                                                               decidedAt: daemon.now - .seconds(1)))
            daemon.turn()
            #expect(daemon.apps.wakeBookkeeping.isEmpty)
            #expect(daemon.apps.deferredInputs.isEmpty, "\(daemon.apps.deferredInputs)")
            #expect(app.lifecycle.keepAliveInterval != nil)
        }
    }
}
