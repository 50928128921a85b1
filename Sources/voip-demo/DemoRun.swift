import Foundation
import Glibc
import SIP
import VoipClient
import VoipdSystem

/// One run of the demo: the processes and servers it started, what each of them said, and
/// the steps (in DemoRun+Steps.swift). Whatever happens, ``run()`` stops everything it
/// started, by pid.
final class DemoRun {
    static let appName = "softphone"

    let options: DemoOptions
    let startTime = WallClock.now
    let pump = EventPump()
    var directory = ""
    /// The demo's own lines (the steps), for the timeline.
    var notes: [LoggedLine] = []

    var voipd: VoipdInstance?
    var feed: TransitionFeed?
    var registrar: SIPRegistrar?
    var tap: RegistrarTap?
    var presence: PresenceServer?
    var softphone: SupervisedProcess?
    var softphoneLog: OutputLines?
    var caller: ChildProcess?
    var callerLogs: [OutputLines] = []
    var calls: [CallObservation] = []
    var registrarHost = "127.0.0.1"
    var registrarPort: UInt16 = 0
    /// The embedded registrar's number for the softphone's REGISTER connection.
    var registerConnection: Int?

    init(options: DemoOptions) {
        self.options = options
    }

    /// Runs every step; the exit status (0: everything shown, 1: a failure, said why).
    func run() -> Int32 {
        print("voip-demo: a softphone suspended by voipd, woken by an INVITE on its VoIP socket")
        var failure: Error?
        do {
            try prepareDirectory()
            try performSteps()
        } catch {
            failure = error
        }
        let voipdLog = voipd?.logTail ?? ""
        step("Stop every process the demo started, by pid")
        stopEverything()
        printTimeline()
        if let failure {
            print("\nvoip-demo: FAILED: \(failure)")
            if !voipdLog.isEmpty { print("voipd's log (last lines):\n\(voipdLog)") }
            removeDirectory()
            return 1
        }
        printSummary()
        removeDirectory()
        return 0
    }

    /// A step's title, printed now and kept for the timeline.
    func step(_ title: String) {
        print("\n== \(title)")
        notes.append(LoggedLine(time: WallClock.now, text: "== \(title)"))
    }

    /// A line under the current step.
    func say(_ text: String) {
        print("   \(text)")
    }

    var sipAddress: String { "\(registrarHost):\(registrarPort)" }

    private func prepareDirectory() throws {
        var template = Array("/tmp/voip-demo.XXXXXX".utf8CString)
        guard let path = mkdtemp(&template) else { throw Errno.current("mkdtemp") }
        directory = String(cString: path)
    }

    /// The softphone (voipd would only resume it: a force quit through voipd, recorded as
    /// such, then by pid in case voipd cannot), the caller, voipd (which then has nothing
    /// left stopped), the registrar.
    private func stopEverything() {
        let killedAt = WallClock.now
        _ = try? voipd?.control.command(.kill, Self.appName)
        softphone?.kill()
        // A softphone voipd relaunched has another pid: ask voipd for every app it runs.
        for app in (try? voipd?.control.status()) ?? [] {
            if let pid = app.pid, let process = try? SupervisedProcess(pid: pid) { process.kill() }
        }
        if let feed, softphone != nil {
            // voipd, its parent, reaps it; stopped first, voipd would leave a zombie behind.
            try? pump.waitUntil("voipd has seen the softphone end", timeout: .seconds(2)) {
                feed.first(Self.appName, to: "terminated", since: killedAt) != nil
            }
        }
        if let softphone { say("softphone pid \(softphone.pid): killed, \(softphone.isAlive ? "still running" : "gone")") }
        if let caller {
            caller.stop(grace: .zero)
            say("caller pid \(caller.pid): \(caller.status.map { "\($0)" } ?? "still running")")
        }
        if let voipd {
            voipd.stop()
            say("voipd pid \(voipd.process.pid): \(voipd.process.status.map { "\($0)" } ?? "still running")")
        }
        registrar?.stop()
        // Every writer is gone now: what the softphone wrote last is in the pipe.
        try? softphoneLog?.drain()
    }

    private func removeDirectory() {
        guard !directory.isEmpty else { return }
        if options.keepDirectory {
            print("voip-demo: kept \(directory)")
        } else {
            try? FileManager.default.removeItem(atPath: directory)
        }
    }
}
