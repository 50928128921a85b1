import Foundation
import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport

/// `voipctl completion SHELL`: the scripts loaded by the real shells, completing verbs,
/// options and states as `voipctl --help` lists them, and app names from a running voipd.
@Suite("Shell completions", .serialized)
struct CompletionTests {
    static let bash = "/bin/bash"
    static let zsh = "/usr/bin/zsh"
    static let fish = "/usr/bin/fish"

    /// The verbs `voipctl --help` lists, and each verb's options from `voipctl VERB --help`.
    static func usageTable() throws -> [String: [String]] {
        let general = try runCommand([Binaries.voipctl, "--help"]).output
        let verbs = general.split(separator: "\n").filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") }
            .compactMap { $0.split(separator: " ").first.map(String.init) }
        var table: [String: [String]] = [:]
        for verb in verbs {
            let help = try runCommand([Binaries.voipctl, verb, "--help"]).output
            // Option lines: "  --name NAME   help" or "  -f, --follow   help".
            table[verb] = help.split(separator: "\n").filter { $0.hasPrefix("  -") }.flatMap { line in
                line.split(separator: " ").prefix(2).map { $0.trimmingCharacters(in: CharacterSet(charactersIn: ",")) }
                    .filter { $0.hasPrefix("-") }
            }
        }
        return table
    }

    static func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    /// voipd running a process (sleep, which does not speak the protocol) under each of
    /// `apps`: names for the completions to offer.
    static func voipd(running apps: [String]) throws -> DaemonHarness {
        let harness = try DaemonHarness()
        do {
            for app in apps { _ = try harness.control.launch(["/bin/sleep", "300"], name: app, speaksProtocol: false) }
        } catch {
            harness.stop()
            throw error
        }
        return harness
    }

    /// Writes the script `voipctl completion SHELL` prints (it must succeed) to `path`.
    static func writeScript(for shell: String, to path: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let generated = try runCommand([Binaries.voipctl, "completion", shell])
        try #require(generated.status == 0, "\(generated.output)", sourceLocation: sourceLocation)
        try write(generated.output, to: path)
    }

    @Test("bash: `complete -p` names the function; verbs, options, states, commands and the running voipd's apps complete",
          .enabled(if: toolAvailableOrCI(bash), "needs bash"))
    func bashCompletion() throws {
        try #require(toolExists(Self.bash))
        let harness = try Self.voipd(running: ["sleeper", "snoozer"])
        defer { harness.stop() }
        let directory = try makeTemporaryDirectory("voipd-bash-completion")
        defer { removeTree(directory) }
        try Self.writeScript(for: "bash", to: directory + "/voipctl.bash")

        // Each case: the words on the line (the last one being completed) and COMPREPLY,
        // sorted. The first word is voipctl as typed: the completion runs it for app names.
        let table = try Self.usageTable()
        #expect(table.count >= 18 && table["launch"]?.contains("--no-relaunch") == true, "\(table)")
        let globals = ["--help", "--json", "--socket", "--version", "-h"]
        var cases: [([String], [String])] = [
            ([""], table.keys.sorted()),
            (["inter"], ["interrupt", "interrupt-end"]),
            (["-"], globals),
            (["launch", "--n"], ["--name", "--no-protocol", "--no-relaunch"]),
            (["events", "--to", "s"], ["suspended"]),
            (["events", "-f", "--to", "active", "--to", ""], ["active", "background", "inactive", "notRunning", "suspended", "terminated"]),
            (["--socket", harness.socketPath, "background", ""], ["sleeper", "snoozer"]),
            (["--socket", harness.socketPath, "status", "sl"], ["sleeper"]),
            (["background", "--socket", harness.socketPath, "sn"], ["snoozer"]),
            (["--socket", harness.socketPath, "background", "sleeper", ""], []),
            (["--socket", harness.socketPath, "lock", ""], []),
            (["completion", ""], ["bash", "fish", "zsh"]),
            (["launch", "--name", "x", "--", "ech"], ["echo"]),
            (["launch", "--cwd", directory + "/voipctl.b"], []),
            (["launch", "--output", directory + "/voipctl.b"], [directory + "/voipctl.bash"]),
        ]
        // Every verb completes exactly the options its --help lists, with the common ones.
        for (verb, options) in table where verb != "completion" {
            cases.append(([verb, "-"], (options + globals + (verb == "launch" ? ["--"] : [])).sorted()))
        }
        cases.append((["completion", "-"], ["--help", "-h"]))

        var script = """
        source \(directory)/voipctl.bash
        complete -p voipctl
        complete_line() {
            COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
            COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
            _voipctl
            printf '%s\\n' "${COMPREPLY[@]}" | grep -v '^$' | LC_ALL=C sort | paste -sd ' ' -
        }

        """
        for (words, _) in cases {
            script += "complete_line \(([Binaries.voipctl] + words).map { "'\($0)'" }.joined(separator: " "))\n"
        }
        try Self.write(script, to: directory + "/run.bash")
        let run = try runCommand([Self.bash, "--norc", "--noprofile", directory + "/run.bash"])
        #expect(run.status == 0, "\(run.output)")
        let lines = run.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        try #require(lines.count >= cases.count + 1, "\(run.output)")
        #expect(lines[0] == "complete -F _voipctl voipctl")
        for (index, (words, expected)) in cases.enumerated() {
            let got = lines[index + 1] == "" ? [] : lines[index + 1].split(separator: " ").map(String.init)
            if words.last == "ech" {
                #expect(got.contains("echo"), "voipctl \(words.joined(separator: " ")): \(got)")
            } else {
                #expect(got == expected.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }, "voipctl \(words.joined(separator: " "))")
            }
        }
    }

    @Test("no option is a flag for one verb and takes a value for another (the completions rely on it)")
    func optionKindsAgree() throws {
        var takesValue: [String: Bool] = [:]
        for verb in try Self.usageTable().keys {
            let help = try runCommand([Binaries.voipctl, verb, "--help"]).output
            for line in help.split(separator: "\n") where line.hasPrefix("  -") {
                let words = line.split(separator: " ").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: ",")) }
                let option = words.first { $0.hasPrefix("--") }!
                let index = words.firstIndex(of: option)!
                // An option's value is an upper-case placeholder: "--count N", "--env KEY=VALUE".
                let valued = index + 1 < words.count && words[index + 1].first.map { $0.isUppercase } == true
                if let known = takesValue[option] { #expect(known == valued, "\(option) in \(verb)") }
                takesValue[option] = valued
            }
        }
        #expect(takesValue["--to"] == true && takesValue["--follow"] == false)
    }

    @Test("fish: the script loads and `complete -C` completes verbs, options, states and the running voipd's apps",
          .enabled(if: toolAvailableOrCI(fish), "needs fish (apt-get install fish; with CI=true its absence is a failure)"))
    func fishCompletion() throws {
        try #require(toolExists(Self.fish), "\(Self.fish) is missing")
        let harness = try Self.voipd(running: ["sleeper"])
        defer { harness.stop() }
        let directory = try makeTemporaryDirectory("voipd-fish-completion")
        defer { removeTree(directory) }
        try Self.writeScript(for: "fish", to: directory + "/voipctl.fish")
        func complete(_ line: String) throws -> [String] {
            let run = try runCommand([Self.fish, "--no-config", "-c", "source \(directory)/voipctl.fish; complete -C '\(line)'"],
                                     environment: currentEnvironment().map { $0.hasPrefix("HOME=") ? "HOME=\(directory)" : $0 })
            #expect(run.status == 0, "\(line): \(run.output)")
            return run.output.split(separator: "\n").map { String($0.split(separator: "\t").first ?? "") }
        }
        #expect(try complete("\(Binaries.voipctl) inter").sorted() == ["interrupt", "interrupt-end"])
        #expect(try complete("\(Binaries.voipctl) events --to sus") == ["suspended"])
        #expect(try complete("\(Binaries.voipctl) launch --no-r") == ["--no-relaunch"])
        #expect(try complete("\(Binaries.voipctl) --socket \(harness.socketPath) kill ") == ["sleeper"])
        #expect(try complete("\(Binaries.voipctl) completion ").sorted() == ["bash", "fish", "zsh"])
    }

    @Test("zsh: the script loads with compinit, and completion in an interactive zsh (zpty) completes a verb, a state and an app",
          .enabled(if: toolAvailableOrCI(zsh), "needs zsh (apt-get install zsh; with CI=true its absence is a failure)"))
    func zshCompletion() throws {
        try #require(toolExists(Self.zsh), "\(Self.zsh) is missing")
        let harness = try Self.voipd(running: ["sleeper"])
        defer { harness.stop() }
        let directory = try makeTemporaryDirectory("voipd-zsh-completion")
        defer { removeTree(directory) }
        mkdir(directory + "/functions", 0o755)
        try Self.writeScript(for: "zsh", to: directory + "/functions/_voipctl")
        #expect(try runCommand([Self.zsh, "-n", directory + "/functions/_voipctl"]).status == 0)

        // An interactive zsh on a pseudo-terminal, voipctl on its PATH: type a line and TAB,
        // then read the terminal until the completed line appears, 20 s at most.
        let lines: [(typed: String, completed: String)] = [
            ("voipctl back", "voipctl background"),
            ("voipctl events --to susp", "voipctl events --to suspended"),
            ("voipctl --socket \(harness.socketPath) terminate sle", "terminate sleeper"),
        ]
        var script = """
        zmodload zsh/zpty zsh/zselect
        zpty -b shell zsh -f -i
        terminal=$REPLY
        expect() {
            local output= chunk deadline=$((SECONDS + 20))
            while ((SECONDS < deadline)); do
                zselect -t 100 -r $terminal || continue
                zpty -r -t shell chunk && output+=$chunk
                [[ $output == *"$1"* ]] && return 0
            done
            print -r -- "terminal: $output"
            return 1
        }
        zpty -w shell "stty cols 1000; PS1='> '; PATH=\(Binaries.directory):\\$PATH; fpath=(\(directory)/functions \\$fpath); autoload -U compinit; compinit -u -D -d \(directory)/zcompdump"

        """
        for (typed, completed) in lines {
            // Ctrl-U clears the line of the case before.
            script += """
            zpty -w -n shell $'\\x15\(typed)\\t'
            if expect '\(completed)'; then print -r -- 'completed: \(completed)'; else print -r -- 'not completed: \(typed)'; fi

            """
        }
        script += "zpty -d shell\n"
        try Self.write(script, to: directory + "/run.zsh")
        let run = try runCommand([Self.zsh, "-f", directory + "/run.zsh"], timeout: .seconds(60))
        for (_, completed) in lines {
            #expect(run.output.contains("completed: \(completed)"), "\(completed): \(run.output.suffix(2000))")
        }
    }
}
