import Foundation
import Glibc
import SIP

// What the demo prints at the end: the report (what happened, the picture of the states,
// why it matters, how it ran), and with --verbose the full timeline before it.
extension DemoRun {
    func printReport() {
        let bold = palette.bold
        for call in calls {
            console.line()
            if call.number == 2 && !isAdopted {
                console.line(bold("Screen lock") + ": voipd reclaimed \(reclaimedSockets) ordinary socket"
                    + (reclaimedSockets == 1 ? "" : "s") + " of the suspended softphone (its presence connection)")
                console.line("  and kept its SIP connection: it holds that one for the app.")
                console.line()
            }
            console.line(bold("Call \(call.number)") + (call.number == 1
                ? ": bob calls \(options.user) while the \(isAdopted ? "adopted baresip" : "softphone") is suspended"
                : isAdopted ? ": bob calls again, baresip suspended again after the first call" : ": bob calls again, after the lock"))
            printTable(call)
            if let forwarded = call.inviteForwarded, let registerConnection, let inviteSent = call.inviteSent {
                console.line(palette.dim("  The registrar sent the INVITE on over the softphone's REGISTER connection (#\(registerConnection))"
                    + String(format: " at %.2f ms,", (forwarded.time - inviteSent) * 1000)))
                console.line(palette.dim("  the softphone in kernel state \(forwarded.watchedProcessState.map(String.init) ?? "?"):"
                    + (isAdopted ? " the embedded registrar reaches a user only that way." : " it listens on no port, so that connection is the only way in.")))
            }
        }
        console.line()
        if isAdopted {
            printAdoption()
        } else {
            console.line(bold("After the lock") + ": resumed, the softphone found its presence connection gone and opened a")
            console.line("  new one; its SIP connection was never lost (\(registers) REGISTER, both INVITEs came over it).")
        }
        printPicture()
        printCost()
        printSetup()
        if options.registrar == nil, Self.kamailioIsInstalled {
            console.line()
            console.line("With Kamailio: Deploy/kamailio/run-kamailio.sh 5070 /tmp/k, then --registrar 127.0.0.1:5070")
        }
        if isAdopted {
            console.line("baresip was not changed in any way and does not speak voipd's protocol: voipd adopted it.")
        }
        console.line(palette.green(bold("voip-demo: OK")) + (options.verbose ? "" : palette.dim("   (--verbose: every step, and the full timeline)")))
    }

    private func printTable(_ call: CallObservation) {
        let rows = call.table
        let stepWidth = max(rows.map(\.step.count).max() ?? 0, 4)
        let afterWidth = max(rows.map(\.after.count).max() ?? 0, "after the INVITE".count)
        func line(_ step: String, _ after: String, _ softphone: String) -> String {
            "  " + step.padding(toLength: stepWidth, withPad: " ", startingAt: 0) + "  "
                + String(repeating: " ", count: afterWidth - after.count) + after + "   " + softphone
        }
        console.line(palette.dim(line("step", "after the INVITE", "the softphone")))
        for row in rows { console.line(line(row.step, row.after, row.softphone)) }
    }

    /// The softphone's states from its launch to the end of the steps, in one line.
    private func printPicture() {
        guard let asked = launchedAt, let end = stepsEndedAt, let feed else { return }
        let transitions = feed.transitions.filter { $0.app == Self.appName }
        // From the launch as voipd stamped it: on a loaded machine the launch request can take
        // longer than a character's time, which would open the picture with "not running".
        let start = max(asked, transitions.first { $0.to == "active" }?.time ?? asked)
        let name = "  \(Self.appName)  "
        var marks: [(time: Double, label: Character)] = []
        if let backgroundedAt { marks.append((backgroundedAt, "b")) }
        if let lockedAt { marks.append((lockedAt, "L")) }
        for call in calls { if let sent = call.inviteSent { marks.append((sent, Character("\(call.number)"))) } }
        let picture = StatePicture(transitions: transitions, from: start, to: end,
                                   width: Console.width - name.count, marks: marks)
        console.line()
        console.line(palette.bold("States over time") + String(format: ": %.1f s from the launch, one character for %.0f ms",
                                                               end - start, picture.slice * 1000))
        console.line(name + picture.drawn(palette))
        console.line(String(repeating: " ", count: name.count) + picture.marks)
        console.line("  " + StatePicture.legend(palette) + palette.dim("   b background  1 2 calls" + (isAdopted ? "" : "  L lock")))
    }

    /// The softphone's CPU time and wake-ups, running and suspended, over the same idle time.
    private func printCost() {
        guard let running, let suspended else { return }
        console.line()
        console.line(palette.bold("Why it matters") + ": the softphone over \(Self.seconds(Self.idleWindow)) with nothing to do, from /proc")
        func line(_ what: String, _ cpu: String, _ wakes: String, _ note: String) -> String {
            let text = "  " + what.padding(toLength: 11, withPad: " ", startingAt: 0) + String(repeating: " ", count: max(0, 9 - cpu.count))
                + cpu + "   " + wakes.padding(toLength: 28, withPad: " ", startingAt: 0) + note
            return String(text.reversed().drop { $0 == " " }.reversed())
        }
        console.line(palette.dim(line("", "CPU time", "wake-ups (context switches)", "")))
        console.line(line("running", Self.milliseconds(running.cpuTime), "\(running.contextSwitches)", isAdopted
                          ? "idle, it sleeps until a timer or a packet"
                          : String(format: "polling its presence server every %.0f ms", Self.presenceInterval * 1000)))
        console.line(line("suspended", Self.milliseconds(suspended.cpuTime), "\(suspended.contextSwitches)",
                          "stopped: no code runs until voipd resumes it"))
        let wakes = calls.compactMap { call in call.resumed.flatMap { resumed in call.inviteSent.map { (resumed.time - $0) * 1000 } } }
        if let slowest = wakes.max() {
            console.line(String(format: "  Suspended, it costs nothing, and still answers: resumed within %.1f ms of each INVITE.", slowest))
        }
    }

    /// What voipd's adoption of baresip found, and what it says about a program that does
    /// not talk to it.
    private func printAdoption() {
        console.line(palette.bold("Adoption") + ": voipd found baresip's SIP sockets itself (its descriptors, matched with the kernel's")
        console.line("  socket tables) and held copies of them; an INVITE on its REGISTER connection woke it:")
        for socket in adoptedSockets { console.line("    " + socket) }
        if let adoptionVerdict { console.line("  It suspended baresip once it had measured it quiet (\(adoptionVerdict)).") }
        console.line(palette.dim("  baresip cannot say when it is done or ask for time: voipd infers it from activity."))
    }

    /// The processes and servers, and how each process ended.
    private func printSetup() {
        console.line()
        console.line(palette.bold("How it ran"))
        if let voipd {
            let scale = options.timeScale == 1 ? "" : String(format: " (lifecycle durations %g times shorter)", 1 / options.timeScale)
            console.line("  voipd      pid \(voipd.process.pid), --time-scale \(options.timeScale)\(scale); \(voipdEnded ?? "?")")
        }
        console.line("  registrar  " + (options.registrar == nil
            ? "embedded, \(sipAddress): it reaches a user only over the user's REGISTER connection"
            : "\(sipAddress) (--registrar)"))
        if let softphone, isAdopted {
            console.line("  baresip    pid \(softphone.pid), unmodified, launched by voipd from its manifest as \(options.user);"
                + " \(adoptedSockets.count) sockets held; \(softphoneEnded ?? "?")")
        } else if let softphone {
            console.line("  softphone  pid \(softphone.pid), started by voipd as \(options.user), its SIP connection held by voipd;"
                + " \(softphoneEnded ?? "?")")
        }
        if !callersEnded.isEmpty {
            let statuses = Set(callersEnded.map(\.status))
            console.line("  callers    " + callersEnded.map { "pid \($0.pid)" }.joined(separator: ", ") + " (softphone call): "
                + (statuses.count == 1 ? (callersEnded.count > 1 ? "each " : "") + statuses.first! : callersEnded.map(\.status).joined(separator: ", ")))
        }
    }

    /// After a failure: what ended how.
    func printStopped() {
        var ended: [String] = []
        if let voipd { ended.append("voipd (pid \(voipd.process.pid), \(voipdEnded ?? "?"))") }
        if let softphone { ended.append("softphone (pid \(softphone.pid), \(softphoneEnded ?? "?"))") }
        ended += callersEnded.map { "caller (pid \($0.pid), \($0.status))" }
        if !ended.isEmpty { console.line("Ended: " + ended.joined(separator: ", ")) }
    }

    /// Whether Kamailio is installed here ($KAMAILIO, else /usr/sbin/kamailio).
    static var kamailioIsInstalled: Bool {
        access(getenv("KAMAILIO").map { String(cString: $0) } ?? "/usr/sbin/kamailio", X_OK) == 0
    }

    // MARK: the timeline (--verbose, and after a failure)

    private struct Entry {
        let time: Double
        let source: String
        let text: String
    }

    func printTimeline() {
        var entries = notes.map { Entry(time: $0.time, source: "demo", text: $0.text) }
        for transition in feed?.transitions ?? [] where transition.app == Self.appName {
            entries.append(Entry(time: transition.time, source: "voipd", text: "\(transition.from) → \(transition.to): \(transition.reason)"))
        }
        entries += (softphoneLog?.lines ?? []).map { Entry(time: $0.time, source: "softphone", text: $0.text) }
        for output in callerLogs {
            entries += output.lines.map { Entry(time: $0.time, source: output.name, text: $0.text) }
        }
        entries += (tap?.records ?? []).compactMap(registrarEntry)
        entries += (presence?.events ?? []).map(presenceEntry)
        console.line()
        console.line(palette.bold("== Timeline") + " (milliseconds since the demo started)")
        let indent = String(repeating: " ", count: 22)
        for entry in entries.sorted(by: { $0.time < $1.time }) {
            let offset = String(format: "%10.3f", (entry.time - startTime) * 1000)
            let head = "\(offset)  \(entry.source.padding(toLength: 9, withPad: " ", startingAt: 0)) "
            // Broken under the text, not under the time.
            let lines = Console.wrap(indent + entry.text, width: Console.width)
            console.line(head + lines[0].dropFirst(indent.count))
            for line in lines.dropFirst() { console.line(line) }
        }
    }

    // The registrar's side of the softphone's connection: what it opened, closed and sent
    // there. Everything else the softphone and the caller log themselves.
    private func registrarEntry(_ record: TrafficRecord) -> Entry? {
        let connection = record.event.connection
        switch record.event.kind {
        case .connectionOpened:
            return Entry(time: record.time, source: "registrar", text: "connection #\(connection) from \(record.event.peer) opened")
        case .connectionClosed(let reason):
            return Entry(time: record.time, source: "registrar", text: "connection #\(connection) closed: \(reason)")
        case .sent(let message) where connection == registerConnection && message.isRequest:
            return Entry(time: record.time, source: "registrar", text: "#\(connection) → \(message.summary)")
        case .note(let text):
            return Entry(time: record.time, source: "registrar", text: "#\(connection): \(text)")
        default:
            return nil
        }
    }

    private func presenceEntry(_ event: PresenceEvent) -> Entry {
        let text: String
        switch event.kind {
        case .opened(let port): text = "connection \(event.connection) opened (from port \(port))"
        case .line(let line): text = "connection \(event.connection): \"\(line)\""
        case .closed(let reason): text = "connection \(event.connection) \(reason)"
        }
        return Entry(time: event.time, source: "presence", text: text)
    }
}
