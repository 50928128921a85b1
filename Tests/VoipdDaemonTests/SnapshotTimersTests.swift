import Foundation
import Glibc
import Testing
@testable import VoipdDaemon
import VoipdLifecycle
import VoipdSystem
import VoipdVocabulary

/// The timers an in-place upgrade carries, read by a program of another version: an older
/// one must not refuse the snapshot for a timer kind it does not know (it would exit, the
/// upgrade failed), and this one drops such a timer rather than the snapshot.
@Suite("Upgrade snapshot: timers across versions", .serialized)
struct SnapshotTimersTests {
    /// ``DaemonTimer`` as the programs before 5a510fa had it: no `stopDeadline`.
    enum TimerBeforeStopDeadline: Decodable {
        case app(AppID, LifecycleTimer)
        case stopCheck(AppID)
        case serviceWatchdog
        case serviceStatus
        case saveState
        case resumeAccepting
        case helloTimeout(UInt64)
        case adoption(AppID)
        case hibernationSlice
        case transfers
    }

    /// What such a program decodes of the snapshot's timers.
    struct OlderTimers: Decodable {
        struct Timer: Decodable {
            var key: TimerBeforeStopDeadline
            var deadline: MonotonicInstant
            var tolerance: Duration
        }
        var timers: [Timer]
    }

    @Test("an app whose stop is awaited has a stop deadline, but the snapshot does not carry it: a program older than that timer reads every timer carried; restoring sets the deadline again")
    func stopDeadlineNotCarried() throws {
        try withDaemonInProcess { daemon in
            let app = try startedApp(daemon)
            let process = try #require(app.process)
            defer {
                _ = try? process.pidfd.send(SIGKILL)
                _ = try? process.pidfd.waitForExit()
            }
            daemon.feed(app, .backgroundRequested)
            #expect(app.lifecycle.phase == .suspending)
            #expect(daemon.timers.contains(.stopDeadline(app.id)))

            // And a timer of a kind every program reads, carried.
            daemon.timers.set(.saveState, deadline: daemon.now + .seconds(1))
            let snapshot = daemon.makeSnapshot(requester: nil)
            #expect(snapshot.timers.map(\.key) == [.saveState], "\(snapshot.timers.map(\.key))")
            #expect(!snapshot.timers.contains { if case .stopDeadline = $0.key { true } else { false } })
            let json = try JSONEncoder().encode(snapshot)
            let older = try JSONDecoder().decode(OlderTimers.self, from: json)
            #expect(older.timers.count == snapshot.timers.count)

            // What restore does for an app still suspending: the wait, and its deadline, again.
            daemon.timers.cancel(.stopDeadline(app.id))
            daemon.apps.stopsAwaited.removeAll()
            daemon.apps.reportedStopsAwaited.removeAll()
            daemon.noteStopAwaited(app)
            #expect(daemon.timers.contains(.stopDeadline(app.id)))
        }
    }

    @Test("a carried timer of a kind this program does not know (a newer program's) is dropped, and the other timers are read")
    func unknownTimerKindDropped() throws {
        let known = DaemonSnapshot.Timer(key: .saveState, deadline: .origin + .seconds(5), tolerance: .zero)
        let encoded = try JSONSerialization.jsonObject(with: JSONEncoder().encode(known)) as? [String: Any]
        var unknown = try #require(encoded)
        unknown["key"] = ["aLaterKind": ["_0": "phone"]]
        let array = try JSONSerialization.data(withJSONObject: [unknown, encoded as Any])
        let timers = try JSONDecoder().decode([DaemonSnapshot.Timer].self, from: array)
        #expect(timers.count == 2)
        #expect(timers[0].key == nil)
        #expect(timers[1].key == .saveState && timers[1].deadline == known.deadline)
    }
}
