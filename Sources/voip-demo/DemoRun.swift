import Foundation
import Glibc
import SIP
import VoipClient
import VoipdSystem

/// One run of the demo: the processes and servers it started, what each of them said, and
/// the steps (in DemoRun+Steps.swift). Whatever happens, ``run()`` stops everything it
/// started, by pid, then reports (DemoRun+Report.swift).
final class DemoRun {
    static let appName = "softphone"
    /// How long the softphone's cost is measured, running and then suspended.
    static let idleWindow: Duration = .seconds(1)
    /// How often the softphone polls its presence server while in the foreground: the
    /// periodic work of a running app, which a suspended one does not do.
    static let presenceInterval = 0.2

    let options: DemoOptions
    let console: Console
    var palette: Palette { console.palette }
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
    /// With `--softphone baresip`: its configuration directory and SIP port, and what
    /// voipd's adoption found (the sockets it holds, its last measurement).
    var baresipHome = ""
    var baresipSIPPort: UInt16 = 0
    var adoptedSockets: [String] = []
    var adoptionVerdict: String?
    var isAdopted: Bool { options.softphone == .baresip }

    // What the report says, as the steps found it.
    var launchedAt: Double?
    var backgroundedAt: Double?
    var lockedAt: Double?
    var reclaimedSockets = 0
    var running: IdleCost?
    var suspended: IdleCost?
    var registers = 0
    var stepsEndedAt: Double?
    /// How the processes the demo started ended.
    var voipdEnded: String?
    var softphoneEnded: String?
    var callersEnded: [(pid: pid_t, status: String)] = []

    init(options: DemoOptions) {
        self.options = options
        console = Console(palette: .forStandardOutput(), showsProgress: !options.verbose)
    }

    /// Runs every step; the exit status (0: everything shown, 1: a failure, said why).
    func run() -> Int32 {
        console.line(palette.bold("voip-demo") + (isAdopted
            ? ": voipd adopts baresip, unmodified: suspends it in the background and wakes it for a call"
            : ": voipd suspends a softphone in the background and wakes it for a call"))
        var failure: Error?
        do {
            try prepareDirectory()
            if isAdopted { try performAdoptedSteps() } else { try performSteps() }
        } catch {
            failure = error
        }
        stepsEndedAt = WallClock.now
        let voipdLog = voipd?.logTail ?? ""
        step("Stop every process the demo started, by pid")
        stopEverything()
        if options.verbose || failure != nil { printTimeline() }
        if let failure {
            console.line()
            console.line(palette.red(palette.bold("voip-demo: FAILED: ")) + "\(failure)")
            if !voipdLog.isEmpty {
                console.line("voipd's log (last lines):")
                for line in voipdLog.split(separator: "\n", omittingEmptySubsequences: false) { console.line(String(line)) }
            }
            printStopped()
            removeDirectory()
            return 1
        }
        printReport()
        removeDirectory()
        return 0
    }

    /// A step's title: printed now with --verbose, else shown as progress on a terminal;
    /// kept for the timeline.
    func step(_ title: String) {
        if options.verbose {
            console.line()
            console.line(palette.bold("== \(title)"))
        } else {
            console.progress(title + "…")
        }
        notes.append(LoggedLine(time: WallClock.now, text: "== \(title)"))
    }

    /// A line under the current step (--verbose only).
    func say(_ text: String) {
        if options.verbose { console.line("   \(text)") }
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
        if let softphone {
            softphoneEnded = softphone.isAlive ? "still running" : "killed"
            say("softphone pid \(softphone.pid): killed, \(softphone.isAlive ? "still running" : "gone")")
        }
        if let caller {
            caller.stop(grace: .zero)
            callersEnded.append((caller.pid, caller.status.map { "\($0)" } ?? "still running"))
            say("caller pid \(caller.pid): \(caller.status.map { "\($0)" } ?? "still running")")
        }
        if let voipd {
            voipd.stop()
            voipdEnded = voipd.process.status.map { "\($0)" } ?? "still running"
            say("voipd pid \(voipd.process.pid): \(voipd.process.status.map { "\($0)" } ?? "still running")")
        }
        registrar?.stop()
        // Every writer is gone now: what the softphone wrote last is in the pipe.
        try? softphoneLog?.drain()
    }

    private func removeDirectory() {
        guard !directory.isEmpty else { return }
        if options.keepDirectory {
            console.line("voip-demo: kept \(directory)")
        } else {
            try? FileManager.default.removeItem(atPath: directory)
        }
    }
}
