import VoipdProtocol
import VoipdVocabulary

/// The shell completion scripts of `voipctl completion SHELL`, written from ``VerbTable``:
/// a verb or option added there is completed everywhere without another edit. App names
/// come from the running voipd (`voipctl status --names`, with the `--socket` on the line),
/// manifest names from the default apps directory.
enum Completion {
    static func script(for shell: String) -> String? {
        switch shell {
        case "bash": return bash
        case "zsh": return zsh
        case "fish": return fish
        default: return nil
        }
    }

    static let appsDirectory = "/etc/voipd/apps.d"

    private static var header: String {
        "completion for voipctl, made by `voipctl completion` (\(VoipdVersion.line(program: "voipctl"))) from its table of verbs and options."
    }

    private static var states: String { AppState.allCases.map(\.rawValue).joined(separator: " ") }

    private static var allOptions: [OptionSpec] { VerbTable.globalOptions + VerbTable.verbs.flatMap(\.options) }

    /// Options of any verb that take a value, grouped by the kind of their value. No option
    /// name is a flag in one verb and takes a value in another (checked by the tests).
    private static func valueOptions(_ kind: ValueKind) -> [String] {
        var names: [String] = []
        for option in allOptions where option.value?.kind == kind && !names.contains(option.name) {
            names.append(option.name)
            if let alias = option.alias { names.append(alias) }
        }
        return names
    }

    /// Every option name (and alias) that takes a value.
    private static var allValueOptions: [String] {
        var names: [String] = []
        for option in allOptions where option.value != nil && !names.contains(option.name) {
            names.append(option.name)
            if let alias = option.alias { names.append(alias) }
        }
        return names
    }

    private static func verbs(withOperands operands: (Operands) -> Bool) -> [String] {
        VerbTable.verbs.filter { operands($0.operands) }.map(\.name)
    }

    private static func optionNames(_ options: [OptionSpec]) -> [String] {
        options.flatMap { [$0.name] + ($0.alias.map { [$0] } ?? []) }
    }

    // MARK: bash

    static var bash: String {
        let valueKinds: [(ValueKind, String)] = [
            (.file, "compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- \"$cur\")"),
            (.directory, "compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- \"$cur\")"),
            (.state, "mapfile -t COMPREPLY < <(compgen -W \"\(states)\" -- \"$cur\")"),
            (.app, "mapfile -t COMPREPLY < <(compgen -W \"$(_voipctl_apps \"${COMP_WORDS[0]}\" \"$socket\")\" -- \"$cur\")"),
            (.text, ""),
        ]
        let valueCases = valueKinds.compactMap { kind, action -> String? in
            let names = valueOptions(kind)
            return names.isEmpty ? nil : "        \(names.joined(separator: "|"))) \(action.isEmpty ? "" : action + "; ")return ;;"
        }.joined(separator: "\n")
        let optionCases = VerbTable.verbs.filter { !$0.options.isEmpty }.map { verb in
            "            \(verb.name)) options=\"\(optionNames(verb.options).joined(separator: " "))\" ;;"
        }.joined(separator: "\n")
        let appVerbs = verbs { if case .app = $0 { return true } else { return false } }
        // Every verb takes one operand at most (before `--`).
        let singleOperand = verbs { $0 != .none }

        return """
        # bash \(header)
        # Load it with `source <(voipctl completion bash)`, or install it as
        # /usr/share/bash-completion/completions/voipctl.

        # The apps of the running voipd, one per line: $1 is voipctl as typed on the line,
        # $2 the --socket given there, if any.
        _voipctl_apps() {
            "$1" ${2:+--socket "$2"} status --names 2>/dev/null
        }

        _voipctl_manifests() {
            local file
            for file in \(appsDirectory)/*.json; do
                [[ -e $file ]] || continue
                file=${file##*/}
                printf '%s\\n' "${file%.json}"
            done
        }

        _voipctl() {
            local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
            local verb="" socket="" dashdash=0 operands=0 i word
            COMPREPLY=()
            for ((i = 1; i < COMP_CWORD; i++)); do
                word=${COMP_WORDS[i]}
                case $word in
                    --) dashdash=$i; break ;;
                    \(allValueOptions.joined(separator: "|"))) [[ $word == --socket ]] && socket=${COMP_WORDS[i+1]}; i=$((i + 1)) ;;
                    -*) ;;
                    *) if [[ -z $verb ]]; then verb=$word; else operands=$((operands + 1)); fi ;;
                esac
            done
            if ((dashdash > 0)); then
                [[ $verb == launch ]] || return 0
                if ((COMP_CWORD == dashdash + 1)); then
                    mapfile -t COMPREPLY < <(compgen -c -- "$cur")
                else
                    compopt -o filenames 2>/dev/null
                    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
                fi
                return 0
            fi
            case $prev in
        \(valueCases)
            esac
            local options="" globals="\(optionNames(VerbTable.globalOptions).joined(separator: " "))"
            case $verb in
                \(VerbTable.verbs.filter { !$0.talksToVoipd }.map(\.name).joined(separator: "|"))) globals="--help -h" ;;
            esac
            if [[ -z $verb ]]; then
                if [[ $cur == -* ]]; then
                    mapfile -t COMPREPLY < <(compgen -W "$globals" -- "$cur")
                else
                    mapfile -t COMPREPLY < <(compgen -W "\(VerbTable.verbs.map(\.name).joined(separator: " "))" -- "$cur")
                fi
                return 0
            fi
            if [[ $cur == -* ]]; then
                case $verb in
        \(optionCases)
                esac
                [[ $verb == launch ]] && options+=" --"
                mapfile -t COMPREPLY < <(compgen -W "$options $globals" -- "$cur")
                return 0
            fi
            case $verb in
                \(singleOperand.joined(separator: "|"))) ((operands == 0)) || return 0 ;;
                *) return 0 ;;
            esac
            case $verb in
                \(appVerbs.joined(separator: "|"))) mapfile -t COMPREPLY < <(compgen -W "$(_voipctl_apps "${COMP_WORDS[0]}" "$socket")" -- "$cur") ;;
                launch) mapfile -t COMPREPLY < <(compgen -W "$(_voipctl_manifests)" -- "$cur") ;;
                completion) mapfile -t COMPREPLY < <(compgen -W "\(VerbTable.shells.joined(separator: " "))" -- "$cur") ;;
            esac
            return 0
        }

        complete -F _voipctl voipctl

        """
    }

    // MARK: zsh

    /// A text as zsh reads it inside single quotes and an `_arguments` description.
    private static func zshDescription(_ text: String) -> String {
        text.replacing("\\", with: "\\\\").replacing("[", with: "\\[")
            .replacing("]", with: "\\]")
            .replacing("'", with: "'\\''")
    }

    private static func zshAction(_ kind: ValueKind) -> String {
        switch kind {
        case .app: return "_voipctl_apps"
        case .manifest: return "_voipctl_manifests"
        case .state: return "(\(states))"
        case .file: return "_files"
        case .directory: return "_files -/"
        case .shell: return "(\(VerbTable.shells.joined(separator: " ")))"
        case .text: return " "
        }
    }

    private static func zshSpecs(_ options: [OptionSpec]) -> [String] {
        options.map { option in
            let names = option.alias.map { "'(\(option.name) \($0))'{\(option.name),\($0)}'" } ?? "'\(option.repeatable ? "*" : "")\(option.name)"
            let value = option.value.map { ":\($0.placeholder):\(zshAction($0.kind))" } ?? ""
            return "\(names)[\(zshDescription(option.help))]\(value)'"
        }
    }

    static var zsh: String {
        let verbs = VerbTable.verbs.map { "        '\($0.name):\(zshDescription($0.summary))'" }.joined(separator: "\n")
        let globals = zshSpecs(VerbTable.globalOptions.filter { $0.name != "--help" && $0.name != "--version" })
        let perVerb = VerbTable.verbs.map { verb -> String in
            var specs = zshSpecs(verb.options) + (verb.talksToVoipd ? globals : []) + ["'(- *)'{-h,--help}'[print the usage of this verb]'"]
            switch verb.operands {
            case .none: break
            case .app(let required): specs.append(required ? "':app:_voipctl_apps'" : "'::app:_voipctl_apps'")
            case .shell: specs.append("':shell:(\(VerbTable.shells.joined(separator: " ")))'")
            case .manifestOrCommand: specs.append("':manifest:_voipctl_manifests'")
            }
            let arguments = "_arguments -s -S \\\n                        " + specs.joined(separator: " \\\n                        ")
            if verb.operands == .manifestOrCommand {
                return """
                            \(verb.name))
                                local separator=${words[(i)--]}
                                if ((separator < CURRENT)); then
                                    shift $separator words
                                    ((CURRENT -= separator))
                                    _normal
                                else
                                    \(arguments)
                                fi ;;
                """
            }
            return "            \(verb.name))\n                \(arguments) ;;"
        }.joined(separator: "\n")

        return """
        #compdef voipctl
        # zsh \(header)
        # Install it as _voipctl in a directory of $fpath (Debian: /usr/share/zsh/vendor-completions).

        # The apps of the running voipd, with the --socket given on the line (before the verb:
        # found by _voipctl; after it: in the words of the verb).
        _voipctl_apps() {
            local -a socket=($voipctl_socket) apps
            local index=${words[(I)--socket]}
            ((index > 0)) && socket=(--socket "${words[index+1]}")
            apps=(${(f)"$(_call_program apps ${voipctl_command:-voipctl} $socket status --names 2>/dev/null)"})
            _wanted apps expl app compadd -a apps
        }

        _voipctl_manifests() {
            local -a manifests
            manifests=(\(appsDirectory)/*.json(N:t:r))
            _wanted manifests expl manifest compadd -a manifests
        }

        _voipctl() {
            local curcontext=$curcontext state line
            # voipctl as typed and its --socket, for the app names (words shift below).
            local voipctl_command=${words[1]}
            local -a voipctl_socket
            local index=${words[(I)--socket]}
            ((index > 0)) && voipctl_socket=(--socket "${words[index+1]}")
            local -a verbs
            verbs=(
        \(verbs)
            )
            _arguments -C \\
                \((globals + ["'(- *)'{-h,--help}'[print the usage of voipctl]'", "'(- *)--version[print voipctl'\\''s version and protocol version]'"]).joined(separator: " \\\n        "))  \\
                '1:verb:->verb' \\
                '*:: :->arguments'
            case $state in
                verb) _describe -t verbs 'voipctl verb' verbs ;;
                arguments)
                    curcontext=${curcontext%:*:*}:voipctl-$words[1]:
                    case $words[1] in
        \(perVerb)
                    esac ;;
            esac
        }

        _voipctl "$@"

        """
    }

    // MARK: fish

    /// A text inside fish's single quotes.
    private static func fishQuoted(_ text: String) -> String {
        "'" + text.replacing("\\", with: "\\\\").replacing("'", with: "\\'") + "'"
    }

    private static func fishOption(_ option: OptionSpec, condition: String?) -> String {
        var line = "complete -c voipctl"
        if let condition { line += " -n \(fishQuoted(condition))" }
        line += " -l \(option.name.dropFirst(2))"
        if let alias = option.alias, alias.count == 2 { line += " -s \(alias.dropFirst())" }
        if let value = option.value {
            switch value.kind {
            case .file: line += " -r -F"
            case .directory: line += " -x -a '(__fish_complete_directories)'"
            case .state: line += " -x -a \(fishQuoted(states))"
            case .app: line += " -x -a '(__voipctl_apps)'"
            case .manifest: line += " -x -a '(__voipctl_manifests)'"
            case .shell: line += " -x -a \(fishQuoted(VerbTable.shells.joined(separator: " ")))"
            case .text: line += " -x"
            }
        }
        return line + " -d \(fishQuoted(option.help))"
    }

    static var fish: String {
        var lines = [
            "# fish \(header)",
            "# Install it as voipctl.fish in a completions directory (Debian: /usr/share/fish/vendor_completions.d).",
            "",
            "# The --socket given on the line, as arguments for voipctl.",
            "function __voipctl_socket",
            "    set -l words (commandline -opc)",
            "    set -l index (contains -i -- --socket $words)",
            "    and set -q words[(math $index + 1)]",
            "    and printf '%s\\n' --socket $words[(math $index + 1)]",
            "end",
            "",
            "# The apps of the running voipd.",
            "function __voipctl_apps",
            "    set -l command (commandline -opc)[1]",
            "    $command (__voipctl_socket) status --names 2>/dev/null",
            "end",
            "",
            "function __voipctl_manifests",
            "    for file in \(appsDirectory)/*.json",
            "        basename $file .json",
            "    end",
            "end",
            "",
            "# Whether the line is past `--`, and where: the command launch starts.",
            "function __voipctl_after_separator",
            "    contains -- -- (commandline -opc)",
            "end",
            "",
            "function __voipctl_command_position",
            "    set -l words (commandline -opc)",
            "    test \"$words[-1]\" = --",
            "end",
            "",
            "complete -c voipctl -f",
        ]
        for option in VerbTable.globalOptions {
            lines.append(fishOption(option, condition: "not __voipctl_after_separator"))
        }
        for verb in VerbTable.verbs {
            lines.append("complete -c voipctl -n __fish_use_subcommand -a \(verb.name) -d \(fishQuoted(verb.summary))")
        }
        for verb in VerbTable.verbs {
            let condition = "__fish_seen_subcommand_from \(verb.name); and not __voipctl_after_separator"
            for option in verb.options { lines.append(fishOption(option, condition: condition)) }
            switch verb.operands {
            case .none: break
            case .app: lines.append("complete -c voipctl -n \(fishQuoted(condition)) -a '(__voipctl_apps)'")
            case .shell: lines.append("complete -c voipctl -n \(fishQuoted(condition)) -a \(fishQuoted(VerbTable.shells.joined(separator: " ")))")
            case .manifestOrCommand:
                lines.append("complete -c voipctl -n \(fishQuoted(condition)) -a '(__voipctl_manifests)'")
                lines.append("complete -c voipctl -n '__fish_seen_subcommand_from \(verb.name); and __voipctl_command_position' -a '(__fish_complete_command)'")
                lines.append("complete -c voipctl -n '__fish_seen_subcommand_from \(verb.name); and __voipctl_after_separator; and not __voipctl_command_position' -F")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
