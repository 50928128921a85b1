import VoipdVocabulary

/// What an option's value or a verb's operand is: for the usage text, and for the shell
/// completions, which complete each kind its own way.
enum ValueKind: Sendable, Equatable {
    /// An app voipd knows: completed from a running voipd (`status --names`).
    case app
    /// An app manifest: completed from the default apps directory.
    case manifest
    /// A lifecycle state (``AppState``).
    case state
    case file
    case directory
    /// A supported shell of `completion`.
    case shell
    /// Anything else: a number, `KEY=VALUE`, a name to choose; not completed.
    case text
}

/// One option of a verb (or of every verb: ``VerbTable/globalOptions``).
struct OptionSpec: Sendable {
    let name: String
    var alias: String?
    /// The value it takes (placeholder and kind), or nil for a flag.
    var value: (placeholder: String, kind: ValueKind)?
    var repeatable = false
    let help: String

    init(_ name: String, alias: String? = nil, value: (String, ValueKind)? = nil, repeatable: Bool = false, _ help: String) {
        self.name = name
        self.alias = alias
        self.value = value.map { (placeholder: $0.0, kind: $0.1) }
        self.repeatable = repeatable
        self.help = help
    }

    /// How the option reads in a synopsis: `--env KEY=VALUE`.
    var synopsis: String { value.map { "\(name) \($0.placeholder)" } ?? name }
}

/// What follows a verb's options.
enum Operands: Sendable, Equatable {
    case none
    /// One app name, required or optional.
    case app(required: Bool)
    /// `launch`: a manifest's name, or `--` and a command.
    case manifestOrCommand
    /// `completion`: a shell.
    case shell
}

/// One verb of voipctl.
struct VerbSpec: Sendable {
    let name: String
    let section: VerbTable.Section
    var options: [OptionSpec] = []
    var operands: Operands = .none
    /// Whether it talks to voipd (and so takes --json, and fails with 3 when voipd is not running).
    var talksToVoipd = true
    /// One line for `voipctl --help`.
    let summary: String
    /// The paragraph of `voipctl VERB --help`, if the summary is not enough.
    var details: String?

    /// The synopses of `voipctl VERB --help` (one per form), options first.
    var synopses: [String] {
        let json = talksToVoipd ? " [--json]" : ""
        switch operands {
        case .none: return ["\(name)\(optionSynopsis(options))\(json)"]
        case .app(let required): return ["\(name)\(optionSynopsis(options))\(json) \(required ? "NAME" : "[NAME]")"]
        case .shell: return ["\(name) SHELL"]
        case .manifestOrCommand:
            let manifestOptions = options.filter { ["--background", "--wait"].contains($0.name) }
            return ["\(name)\(optionSynopsis(options))\(json) -- CMD [ARGS...]",
                    "\(name)\(optionSynopsis(manifestOptions))\(json) NAME"]
        }
    }

    /// The short form of the general usage: `events [--follow] [--to STATE] [NAME]`.
    var shortSynopsis: String {
        switch operands {
        case .none: return name + optionSynopsis(options)
        case .app(let required): return "\(name)\(optionSynopsis(options)) \(required ? "NAME" : "[NAME]")"
        case .shell: return "\(name) SHELL"
        case .manifestOrCommand: return "\(name) [OPTIONS] -- CMD | NAME"
        }
    }

    private func optionSynopsis(_ options: [OptionSpec]) -> String {
        options.map { " [\($0.synopsis)]\($0.repeatable ? "..." : "")" }.joined()
    }

    func option(named name: String) -> OptionSpec? {
        options.first { $0.name == name || $0.alias == name }
    }
}

/// Every verb and option voipctl accepts: the parser, the usage text and the shell
/// completions are all made from this table, so they cannot disagree.
enum VerbTable {
    enum Section: String, CaseIterable, Sendable {
        case apps = "Apps"
        case system = "System"
        case shell = "This tool"
    }

    /// Options every verb takes, before `--`.
    static let globalOptions: [OptionSpec] = [
        OptionSpec("--socket", value: ("PATH", .file), "voipd's control socket (default: $VOIPD_SOCKET, else $XDG_RUNTIME_DIR/voipd.sock, or /run/voipd/voipd.sock as root)"),
        OptionSpec("--json", "print the result as JSON"),
        OptionSpec("--help", alias: "-h", "print the usage of voipctl or of a verb"),
        OptionSpec("--version", "print voipctl's version and protocol version"),
    ]

    static let shells = ["bash", "zsh", "fish"]

    static let verbs: [VerbSpec] = {
        func move(_ name: String, _ summary: String) -> VerbSpec {
            VerbSpec(name: name, section: .apps, operands: .app(required: true), summary: summary)
        }
        return [
            VerbSpec(name: "launch", section: .apps, options: [
                OptionSpec("--name", value: ("NAME", .text), "the app's name (default: the command's base name)"),
                OptionSpec("--background", "start in the background rather than the foreground"),
                OptionSpec("--wait", "return once the app has connected to voipd"),
                OptionSpec("--output", value: ("FILE", .file), "append the app's standard output and error to FILE"),
                OptionSpec("--env", value: ("KEY=VALUE", .text), repeatable: true, "add to the app's environment (repeatable)"),
                OptionSpec("--cwd", value: ("DIR", .directory), "working directory"),
                OptionSpec("--no-protocol", "the program does not talk to voipd: suspend and resume it silently"),
                OptionSpec("--adopt", value: ("RULE", .text), repeatable: true,
                           "adopt the program's VoIP sockets that RULE takes (sip, udp:local=*:5062…; repeatable); implies --no-protocol"),
                OptionSpec("--exits-on-suspend", "terminate it instead of suspending it (UIApplicationExitsOnSuspend)"),
                OptionSpec("--no-relaunch", "do not relaunch it when data arrives after it died"),
            ], operands: .manifestOrCommand, summary: "start a command or a manifest's app",
            details: """
            With a command, starts it under supervision (as the caller, when voipd runs as
            root). With a NAME alone, starts the app its manifest describes (the apps
            directory of voipd's configuration, /etc/voipd/apps.d by default); of the
            options only --background and --wait apply then.
            """),
            VerbSpec(name: "status", section: .apps, options: [
                OptionSpec("--names", "print only the apps' names, one per line"),
            ], operands: .app(required: false), summary: "apps, their states and held sockets",
            details: "One line per app; --json prints {\"apps\": [...]}."),
            VerbSpec(name: "sockets", section: .apps, operands: .app(required: false), summary: "held VoIP sockets",
                     details: "The VoIP sockets voipd holds; --json prints {\"sockets\": [...]}."),
            move("background", "walk an app to the background"),
            move("foreground", "bring an app to the foreground"),
            move("interrupt", "an interruption: active → inactive"),
            move("interrupt-end", "end it: inactive → active"),
            move("terminate", "willTerminate, then SIGKILL"),
            move("kill", "force quit: SIGKILL, no event"),
            move("reclaim", "reclaim a suspended app's sockets"),
            move("hibernate", "page a suspended app's memory out"),
            move("forget", "drop a dead app, close its sockets"),
            VerbSpec(name: "top", section: .apps, options: [
                OptionSpec("--interval", value: ("SECONDS", .text), "how often CPU and memory are read again (default 2)"),
                OptionSpec("--once", "print the table once, even on a terminal"),
            ], summary: "a live view of every app, like top(1)",
            details: """
            On a terminal, a full-screen view of every app (state, time in it, held
            sockets, wakes, CPU, memory, last transition) under voipd's own figures,
            redrawn when a transition arrives, and every --interval for CPU and memory.
            Keys: ↑ ↓ (or k j) select, < > sort by another column, r reverse the order,
            b background, f foreground, t terminate (asks first), q quit. Not on a
            terminal, or with --once or --json, it prints the table once (CPU% over
            each process's life, as ps shows it).
            """),
            VerbSpec(name: "lock", section: .system, summary: "lock the screen (reclaims sockets)"),
            VerbSpec(name: "unlock", section: .system, summary: "unlock the screen"),
            VerbSpec(name: "memory-pressure", section: .system, options: [
                OptionSpec("--critical", "foreground apps may be ended too"),
                OptionSpec("--count", value: ("N", .text), "how many apps to end (default 1)"),
            ], summary: "end apps as if memory ran short",
            details: """
            Reclaims suspended apps' ordinary sockets, then ends N apps (default 1):
            suspended ones first, largest resident memory first, then background ones;
            foreground apps only with --critical.
            """),
            VerbSpec(name: "events", section: .system, options: [
                OptionSpec("--follow", alias: "-f", "after the history, print each new transition as it happens"),
                OptionSpec("--to", value: ("STATE", .state), repeatable: true, "only transitions to STATE (repeatable)"),
            ], operands: .app(required: false), summary: "state transitions, one per line",
            details: """
            One line per transition: time, app, from, to, reason; --to keeps only transitions
            to those states (\(AppState.allCases.map { $0.rawValue }.separated(by: ", "))).
            """),
            VerbSpec(name: "transfers", section: .apps, options: [
                OptionSpec("--follow", alias: "-f", "refresh until interrupted (on a terminal, in place; --json: one line each time)"),
                OptionSpec("--interval", value: ("SECONDS", .text), "with --follow, how often (default 1)"),
            ], operands: .app(required: false), summary: "background transfers: state, bytes, rate, progress",
                     details: """
                     Each background download and upload voipd performs for apps (every app's, or
                     NAME's): its number, app, session, kind, state (and why it waits), bytes moved
                     and expected, the running attempt's rate, a progress bar, and its URL. --json
                     gives every field.
                     """),
            VerbSpec(name: "power", section: .system, options: [
                OptionSpec("--source", value: ("SOURCE", .text), "externalPower, battery, or auto (what /sys/class/power_supply says)"),
            ], summary: "the power source background transfers see",
            details: """
            Discretionary background transfers wait while the device is on battery. voipd
            reads /sys/class/power_supply; --source overrides it until auto.
            """),
            VerbSpec(name: "network", section: .system, options: [
                OptionSpec("--expensive", value: ("yes|no|auto", .text), "a metered network: discretionary transfers wait"),
                OptionSpec("--kind", value: ("KIND|auto", .text), "wifi, cellular, ethernet…: whose daily budget counts"),
                OptionSpec("--available", value: ("yes|no|auto", .text), "no: no transfer starts"),
            ], summary: "the network background transfers see",
            details: """
            Changes what background transfers know of the network; what is not given stays.
            voipd follows the system's network by itself; each value given here stays over
            it until the same option is given auto. On an expensive network, discretionary
            tasks and tasks that do not allow expensive networks wait.
            """),
            VerbSpec(name: "stats", section: .system, summary: "counters, Prometheus text format",
                     details: """
                     Counters in the Prometheus text exposition format (for node_exporter's textfile
                     collector); --json wraps the text as {"prometheus": …}.
                     """),
            VerbSpec(name: "upgrade", section: .system, summary: "re-execute voipd in place",
                     details: """
                     voipd re-executes its program file (the new version, if a package replaced it),
                     keeping every app, connection and held socket; suspended apps stay suspended.
                     The same as sending voipd SIGUSR2.
                     """),
            VerbSpec(name: "completion", section: .shell, operands: .shell, talksToVoipd: false,
                     summary: "a completion script: bash, zsh, fish",
                     details: """
                     Prints a completion script for SHELL (\(shells.separated(by: ", "))): verbs, options,
                     states, files, and app names from the running voipd. For instance:
                       voipctl completion bash > ~/.local/share/bash-completion/completions/voipctl
                       source <(voipctl completion bash)
                     """),
        ]
    }()

    static func verb(named name: String) -> VerbSpec? { verbs.first { $0.name == name } }

    static func globalOption(named name: String) -> OptionSpec? {
        globalOptions.first { $0.name == name || $0.alias == name }
    }
}
