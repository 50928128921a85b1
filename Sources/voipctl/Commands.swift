import FoundationEssentials
import Glibc
import VoipClient
import VoipdProtocol
import VoipdSystem

/// One verb of voipctl, with what is left of the command line.
struct Commands {
    let verb: String
    let arguments: ArgumentList
    var socketPath: String? { arguments.option("--socket") }
    var json: Bool { arguments.flag("--json") }

    func run() throws -> ExitStatus {
        switch verb {
        case "launch": return try launch()
        case "status": return try statusCommand()
        case "sockets": return try socketsCommand()
        case "background", "foreground", "interrupt", "interrupt-end", "terminate", "kill", "reclaim", "hibernate", "forget":
            return try appCommand()
        case "lock", "unlock": return try lockCommand()
        case "memory-pressure": return try memoryPressure()
        case "events": return try eventsCommand()
        case "stats": return try statsCommand()
        case "transfers": return try transfersCommand()
        case "power": return try powerCommand()
        case "network": return try networkCommand()
        case "top": return try topCommand()
        case "upgrade": return try upgradeCommand()
        case "completion": return try completionCommand()
        default: throw UsageFailure(message: "unknown verb \(verb)")
        }
    }

    private func control() throws -> VoipdControl { try VoipdControl(socketPath: socketPath) }

    /// Only launch takes a command after `--`.
    private func noCommand() throws {
        if arguments.command != nil { throw UsageFailure(message: "\(verb) takes no command after --", verb: verb) }
    }

    private func noMoreArguments() throws {
        try noCommand()
        if let extra = arguments.operands.first { throw UsageFailure(message: "unexpected argument \(extra)", verb: verb) }
    }

    /// The single NAME argument of a verb (optional or not).
    private func nameArgument(required: Bool) throws -> String? {
        try noCommand()
        let rest = arguments.operands
        guard rest.count <= 1 else { throw UsageFailure(message: "too many arguments", verb: verb) }
        if required && rest.isEmpty { throw UsageFailure(message: "\(verb) needs an app NAME", verb: verb) }
        return rest.first
    }

    private func launch() throws -> ExitStatus {
        let name = arguments.option("--name")
        let background = arguments.flag("--background")
        let wait = arguments.flag("--wait")
        let outputPath = arguments.option("--output")
        let environment = arguments.repeatedOption("--env")
        let directory = arguments.option("--cwd")
        let noProtocol = arguments.flag("--no-protocol")
        let adopt = arguments.repeatedOption("--adopt")
        let exitsOnSuspend = arguments.flag("--exits-on-suspend")
        let noRelaunch = arguments.flag("--no-relaunch")
        let rest = arguments.operands
        guard let command = arguments.command else {
            // `launch NAME`: an app manifest.
            guard rest.count == 1, let manifest = rest.first, !manifest.contains("/") else {
                throw UsageFailure(message: "give a manifest's NAME, or put the command after --", verb: verb)
            }
            let app = try control().launchManifest(manifest, background: background, waitForConnection: wait)
            write(json ? Output.json(AppResult(app: app)) : app.name)
            return .ok
        }
        if let unexpected = rest.first { throw UsageFailure(message: "unexpected argument \(unexpected) (the command goes after --)", verb: verb) }
        guard !command.isEmpty else { throw UsageFailure(message: "no command after --", verb: verb) }
        for entry in environment where !entry.contains("=") { throw UsageFailure(message: "--env needs KEY=VALUE, not \(entry)", verb: verb) }
        var output: FileDescriptor?
        if let outputPath {
            output = try openFile(outputPath, flags: O_WRONLY | O_CREAT | O_APPEND)
        }
        let app = try control().launch(command, name: name, environment: environment, workingDirectory: directory,
                                       background: background, waitForConnection: wait, speaksProtocol: !noProtocol,
                                       exitsOnSuspend: exitsOnSuspend, relaunchOnData: !noRelaunch, adopt: adopt, output: output?.rawValue)
        write(json ? Output.json(AppResult(app: app)) : app.name)
        return .ok
    }

    private func statusCommand() throws -> ExitStatus {
        let apps = try control().status(nameArgument(required: false))
        if arguments.flag("--names") {
            if !apps.isEmpty { write(apps.map(\.name).joined(separator: "\n")) }
            return .ok
        }
        write(json ? Output.json(StatusResult(apps: apps)) : Output.apps(apps))
        return .ok
    }

    private func socketsCommand() throws -> ExitStatus {
        let sockets = try control().sockets(nameArgument(required: false))
        write(json ? Output.json(SocketsResult(sockets: sockets)) : Output.sockets(sockets))
        return .ok
    }

    private func appCommand() throws -> ExitStatus {
        let name = try nameArgument(required: true)!
        let verbs: [String: AppVerb] = ["background": .background, "foreground": .foreground, "interrupt": .interrupt,
                                        "interrupt-end": .interruptEnd, "terminate": .terminate, "kill": .kill,
                                        "reclaim": .reclaim, "hibernate": .hibernate, "forget": .forget]
        let app = try control().command(verbs[verb]!, name)
        write(json ? Output.json(AppResult(app: app)) : verb == "hibernate" ? Output.hibernated(app) : "\(app.name): \(Output.state(of: app))")
        return .ok
    }

    private func lockCommand() throws -> ExitStatus {
        try noMoreArguments()
        let apps = try control().system(verb == "lock" ? .lock : .unlock)
        write(json ? Output.json(SystemCommandResult(apps: apps)) : verb == "lock" ? "locked; reclaimed: \(apps.joined(separator: " "))" : "unlocked")
        return .ok
    }

    private func memoryPressure() throws -> ExitStatus {
        let critical = arguments.flag("--critical")
        let countText = arguments.option("--count")
        try noMoreArguments()
        guard let count = Int(countText ?? "1"), count >= 0 else { throw UsageFailure(message: "--count needs a number", verb: verb) }
        let apps = try control().system(.memoryPressure, level: critical ? .critical : .warning, count: count)
        write(json ? Output.json(SystemCommandResult(apps: apps)) : "terminated: \(apps.isEmpty ? "none" : apps.joined(separator: " "))")
        return .ok
    }

    private func eventsCommand() throws -> ExitStatus {
        let follow = arguments.flag("--follow")
        var states: [AppState] = []
        for text in arguments.repeatedOption("--to") {
            guard let state = AppState(rawValue: text) else {
                throw UsageFailure(message: "--to needs a state (\(AppState.allCases.map(\.rawValue).joined(separator: ", "))), not \(text)", verb: verb)
            }
            states.append(state)
        }
        let name = try nameArgument(required: false)
        let control = try control()
        let print: (TransitionRecord) -> Void = { record in write(json ? Output.json(record) : Output.transition(record)) }
        for record in try control.events(name, follow: follow, to: states.isEmpty ? nil : states) { print(record) }
        guard follow else { return .ok }
        while let record = try control.nextTransition(timeoutMilliseconds: -1) { print(record) }
        return .ok
    }

    private func transfersCommand() throws -> ExitStatus {
        let name = try nameArgument(required: false)
        let follow = arguments.flag("--follow")
        var interval = Duration.seconds(1)
        if let text = arguments.option("--interval") {
            guard follow else { throw UsageFailure(message: "--interval goes with --follow", verb: verb) }
            guard let seconds = Double(text), seconds >= 0.1, seconds <= 3600 else {
                throw UsageFailure(message: "--interval needs a number of seconds from 0.1 to 3600, not \(text)", verb: verb)
            }
            interval = .milliseconds(Int64(seconds * 1000))
        }
        let control = try control()
        guard follow else {
            let tasks = try control.transfers(app: name)
            write(json ? Output.json(TransferTasksResult(tasks: tasks)) : Output.transfers(tasks))
            return .ok
        }
        // Until interrupted, or until voipd goes away (an error): on a terminal the table is
        // drawn again in place; otherwise each refresh follows the last (JSON: one line each).
        let redraw = !json && Terminal.isTerminal(STDOUT_FILENO)
        var next = MonotonicInstant.now
        while true {
            let tasks = try control.transfers(app: name)
            if json {
                write(Output.json(TransferTasksResult(tasks: tasks)))
            } else if redraw {
                write("\u{1b}[H\u{1b}[2J" + "voipd transfers, every \(interval.seconds) s (Ctrl-C ends)\n\n" + Output.transfers(tasks))
            } else {
                write(Output.transfers(tasks) + "\n")
            }
            next += interval
            var nothing: [pollfd] = []
            do {
                _ = try poll(&nothing, timeoutMilliseconds: pollTimeout(until: next))
            } catch {
                // A signal that did not end voipctl (SIGWINCH) refreshes now; nothing else
                // can fail a poll of no descriptors.
                guard error == .interrupted else { throw error }
            }
        }
    }

    private func powerCommand() throws -> ExitStatus {
        let text = arguments.option("--source")
        try noMoreArguments()
        guard let text, let setting = PowerSetting(rawValue: text) else {
            throw UsageFailure(message: "power needs --source externalPower, battery or auto", verb: verb)
        }
        let result = try control().setPower(setting)
        write(json ? Output.json(result) : Output.conditions(result))
        return .ok
    }

    private func networkCommand() throws -> ExitStatus {
        var setting = NetworkSetting()
        var automatic: [NetworkSetting.Field] = []
        func yesNo(_ option: String, _ field: NetworkSetting.Field) throws -> Bool? {
            guard let text = arguments.option(option) else { return nil }
            switch text {
            case "yes": return true
            case "no": return false
            case "auto":
                automatic.append(field)
                return nil
            default: throw UsageFailure(message: "\(option) needs yes, no or auto, not \(text)", verb: verb)
            }
        }
        setting.expensive = try yesNo("--expensive", .expensive)
        setting.available = try yesNo("--available", .available)
        if let kind = arguments.option("--kind") {
            if kind == "auto" { automatic.append(.kind) } else { setting.kind = kind }
        }
        setting.auto = automatic.isEmpty ? nil : automatic
        try noMoreArguments()
        guard setting != NetworkSetting() else { throw UsageFailure(message: "network needs --expensive, --kind or --available", verb: verb) }
        let result = try control().setNetwork(setting)
        write(json ? Output.json(result) : Output.conditions(result))
        return .ok
    }

    private func upgradeCommand() throws -> ExitStatus {
        try noMoreArguments()
        let result = try control().upgrade()
        write(json ? Output.json(result) : "voipd upgraded in place (pid \(result.pid)): \(result.apps) apps and \(result.heldSockets) held sockets carried over")
        return .ok
    }

    private func statsCommand() throws -> ExitStatus {
        try noMoreArguments()
        let text = try control().stats()
        if json {
            write(Output.json(StatsResult(prometheus: text)))
            return .ok
        }
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { _ = Glibc.write(1, $0.baseAddress, $0.count) }
        return .ok
    }

    private func topCommand() throws -> ExitStatus {
        try noMoreArguments()
        var interval = Duration.seconds(2)
        if let text = arguments.option("--interval") {
            guard let seconds = Double(text), seconds >= 0.1, seconds <= 3600 else {
                throw UsageFailure(message: "--interval needs a number of seconds from 0.1 to 3600, not \(text)", verb: verb)
            }
            interval = .milliseconds(Int64(seconds * 1000))
        }
        let live = !json && !arguments.flag("--once") && Terminal.isTerminal(STDIN_FILENO) && Terminal.isTerminal(STDOUT_FILENO)
        let session = try TopSession(socketPath: socketPath)
        guard live else {
            write(json ? Output.json(TopSnapshot(session.snapshot)) : TopScreen.table(session.snapshot))
            return .ok
        }
        if let signal = try session.runLive(interval: interval) { takeDefaultAction(of: signal) }
        return .ok
    }

    private func completionCommand() throws -> ExitStatus {
        try noCommand()
        guard arguments.operands.count == 1, let shell = arguments.operands.first else {
            throw UsageFailure(message: "completion needs a SHELL (\(VerbTable.shells.joined(separator: ", ")))", verb: verb)
        }
        guard let script = Completion.script(for: shell) else {
            throw UsageFailure(message: "no completion for \(shell); one of \(VerbTable.shells.joined(separator: ", "))", verb: verb)
        }
        write(script)
        return .ok
    }
}
