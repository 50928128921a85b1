import SIP

// The timeline and the summary printed at the end.
extension DemoRun {
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
        print("\n== Timeline (milliseconds since the demo started)")
        for entry in entries.sorted(by: { $0.time < $1.time }) {
            let offset = String(format: "%10.3f", (entry.time - startTime) * 1000)
            print("\(offset)  \(entry.source.padding(toLength: 10, withPad: " ", startingAt: 0)) \(entry.text)")
        }
    }

    func printSummary() {
        print("\n== What it showed")
        print("   - the softphone was stopped (kernel state T) by voipd in the background, holding no CPU")
        for call in calls {
            print("   - call \(call.number): woken by the INVITE on its VoIP socket, it rang and answered; suspended again after the call")
            print("       wake latency: \(call.wakeLatency)")
        }
        print("   - the INVITEs came over the TCP connection the softphone opened for REGISTER (its Contact is unresolvable, it listens on no port)")
        print("   - the screen lock reclaimed its ordinary presence connection; it reconnected when resumed; the SIP connection was never touched")
        print("voip-demo: OK")
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
