import FoundationEssentials
import VoipdProtocol

/// How results are printed: a table for people, JSON for scripts.
enum Output {
    static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? String(decoding: encoder.encode(value), as: UTF8.self)) ?? "{}"
    }

    static func table(_ header: [String], _ rows: [[String]]) -> String {
        var widths = header.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, cell in
                i == cells.count - 1 ? cell : cell.padded(to: widths[i])
            }.separated(by: "  ")
        }
        return ([line(header)] + rows.map(line)).separated(by: "\n")
    }

    static func time(_ seconds: Double) -> String {
        localTimestamp(seconds)
    }

    static func apps(_ apps: [AppStatus]) -> String {
        table(["NAME", "PID", "STATE", "SOCKETS", "WAKES", "RESIDENT", "SWAPPED", "CONNECTED", "CALL", "REACHABLE", "REASON"], apps.map { app in
            [app.name, app.pid.map(String.init) ?? "-", state(of: app), "\(app.voipSockets)", "\(app.wakes)",
             app.residentBytes.map(TopValue.bytes) ?? "-", app.swappedBytes.map(TopValue.bytes) ?? "-",
             app.connected ? "yes" : "no", app.inCallSeconds.map { "\(Int($0)) s" } ?? "-",
             app.reachable.map { $0 ? "yes" : "NO" } ?? "-", app.terminationReason?.description ?? ""]
        }) + apps.compactMap(adoption).separated(by: "") + apps.compactMap(keepAliveWarning).separated(by: "")
    }

    /// A warning under the table when an app's keep-alive cannot keep it reachable.
    private static func keepAliveWarning(_ app: AppStatus) -> String? {
        app.keepAliveWarning.map { "\n\(app.name): WARNING: \($0)" }
    }

    /// The lines of an adopted program under the table: its rules, what was adopted, warnings.
    private static func adoption(_ app: AppStatus) -> String? {
        guard let adoption = app.adoption else { return nil }
        var lines = ["\n\(app.name): adopts \(adoption.rules.joined(separator: ", ")); " + (adoption.lastLook == nil
            ? "not looked yet (it looks when the program is backgrounded)"
            : "\(adoption.adopted.count) socket\(adoption.adopted.count == 1 ? "" : "s") held, \(adoption.ignored) ignored")]
        lines += adoption.adopted.map { "  \($0)" }
        if let activity = adoption.activity { lines.append("  activity: \(activity)") }
        if let warning = adoption.warning { lines.append("  warning: \(warning)") }
        return lines.joined(separator: "\n")
    }

    /// The state, with a suspended app's hibernation: `hibernated` (a kind of suspended).
    static func state(of app: AppStatus) -> String {
        guard let hibernation = app.hibernation else { return app.state.rawValue }
        switch hibernation.state {
        case .pagingOut: return "hibernating"
        case .hibernated: return hibernation.swap == nil ? "hibernated (no swap)" : "hibernated"
        case .overLimit: return "suspended (over hibernation limit)"
        }
    }

    /// What `voipctl hibernate` did.
    static func hibernated(_ app: AppStatus) -> String {
        let memory = "resident \(app.residentBytes.map(TopValue.bytes) ?? "-"), swapped \(app.swappedBytes.map(TopValue.bytes) ?? "-")"
        guard let hibernation = app.hibernation, hibernation.state == .hibernated else { return "\(app.name): \(state(of: app)) (\(memory))" }
        guard let swap = hibernation.swap else {
            return "\(app.name): hibernated without swap: only file-backed pages were paged out; anonymous memory stays resident (\(memory))"
        }
        return "\(app.name): hibernated into \(swap) (\(memory))"
    }

    static func sockets(_ sockets: [HeldSocketStatus]) -> String {
        table(["APP", "SOCKET", "KIND", "WAITING", "PEER", "WATCHED"], sockets.map { socket in
            [socket.app, socket.name, kind(of: socket), waiting(on: socket), socket.peerClosed ? "closed" : "open",
             socket.watching ? "yes" : "no"]
        })
    }

    /// `tcp`, `tcp listening`, `udp unconnected`: the role shows when it is not the usual one.
    static func kind(of socket: HeldSocketStatus) -> String {
        guard let role = socket.role, role != "connected" else { return socket.kind }
        return "\(socket.kind) \(role)"
    }

    /// What waits on it: bytes, or for a listener connections to accept.
    static func waiting(on socket: HeldSocketStatus) -> String {
        guard let connections = socket.connectionsWaiting else { return "\(socket.bytesAvailable) bytes" }
        return connections == 1 ? "1 connection" : "\(connections) connections"
    }

    /// Background transfers: one line each, with a progress bar when the size is known.
    static func transfers(_ tasks: [TransferTaskStatus]) -> String {
        table(["TASK", "APP", "SESSION", "KIND", "STATE", "BYTES", "RATE", "PROGRESS", "URL"], tasks.map { task in
            let done = task.kind == .download ? task.bytesReceived : task.bytesSent
            let expected = task.kind == .download ? task.bytesExpectedToReceive : task.bytesExpectedToSend
            var state = task.state.rawValue
            if let reason = task.waitReason { state += " (\(reason))" }
            if let error = task.error { state += ": \(error)" }
            return ["\(task.task)", task.app, task.session, task.kind.rawValue, state,
                    TopValue.bytes(UInt64(max(done, 0))) + (expected.map { " / " + TopValue.bytes(UInt64(max($0, 0))) } ?? ""),
                    task.bytesPerSecond.map { TopValue.bytes(UInt64(max($0, 0))) + "/s" } ?? "-",
                    expected.map { progressBar(done, of: $0) } ?? "-", task.url]
        })
    }

    static func conditions(_ result: TransferConditionsResult) -> String {
        let overridden = result.networkOverridden.map(\.rawValue).joined(separator: ", ")
        return "power: \(result.power.rawValue)\(result.powerOverridden ? " (set by voipctl power)" : ""); network: \(result.networkKind), "
            + "\(result.expensive ? "expensive" : "not expensive"), \(result.networkAvailable ? "available" : "unavailable")"
            + (overridden.isEmpty ? "" : " (\(overridden) set by voipctl network)")
    }

    /// `[#####·····]  50%`.
    static func progressBar(_ done: Int64, of total: Int64, width: Int = 10) -> String {
        let fraction = total > 0 ? min(max(Double(done) / Double(total), 0), 1) : 1
        let filled = Int((fraction * Double(width)).rounded(.down))
        let percent = String(Int((fraction * 100).rounded(.down)))
        return "[" + String(repeating: "#", count: filled) + String(repeating: "·", count: width - filled) + "] "
            + String(repeating: " ", count: 3 - percent.count) + percent + "%"
    }

    static func transition(_ record: TransitionRecord) -> String {
        "\(time(record.time))  \(record.app)  \(record.from.rawValue) → \(record.to.rawValue)  \(record.reason)"
    }
}
