import Foundation
import Glibc
import Testing
import VoipdLifecycle
import VoipdTestSupport

/// The manual pages in Deploy/man, written in mdoc: clean under `mandoc -T lint`, and naming
/// exactly what the programs accept: voipd's flags (`voipd --help`), voipctl's verbs and
/// options (`voipctl --help`, `voipctl VERB --help`, made from its table), the keys and
/// durations of the configuration and of manifests (from voipd's own list of known keys),
/// and libvoipd's functions, refusals and event kinds (from voipd.h).
@Suite("Manual pages")
struct ManualPageTests {
    static let mandoc = "/usr/bin/mandoc"
    static let directory = DeployTests.deploy + "/man"
    static let pages = ["voipd.8", "voipctl.1", "voipd.json.5", "voipd-manifest.5", "libvoipd.3"]

    static func page(_ name: String) throws -> [Substring] {
        try String(contentsOfFile: directory + "/" + name, encoding: .utf8).split(separator: "\n")
    }

    /// The lines of section (`.Sh`) or subsection (`.Ss`) `title`.
    static func section(_ lines: [Substring], _ title: String) -> [Substring] {
        guard let start = lines.firstIndex(where: { $0 == ".Sh \(title)" || $0 == ".Ss \(title)" }) else { return [] }
        let level = lines[start].prefix(3)
        let rest = lines[(start + 1)...]
        let end = rest.firstIndex { $0.hasPrefix(".Sh ") || ($0.hasPrefix(level + " ") && level == ".Ss") } ?? lines.endIndex
        return Array(lines[(start + 1)..<end])
    }

    /// Every `Fl -name` (and `Fl x`) in the lines, as the option is typed: `--name`, `-x`.
    static func options(_ lines: some Sequence<Substring>) -> Set<String> {
        var found: Set<String> = []
        for line in lines where line.hasPrefix(".") {
            let words = line.split(separator: " ")
            for (index, word) in words.enumerated() where word == "Fl" && index + 1 < words.count {
                let option = words[index + 1]
                if option.first?.isLetter == true || option.hasPrefix("-") && option.count > 1 { found.insert("-" + option) }
            }
        }
        return found
    }

    /// The first word after `.It Ic` of each item: keys and durations.
    static func items(_ lines: [Substring]) -> [String] {
        lines.filter { $0.hasPrefix(".It Ic ") }.compactMap { $0.split(separator: " ").dropFirst(2).first.map(String.init) }
    }

    @Test("every page is clean under mandoc -T lint (only references to pages not installed here are let through)",
          .enabled(if: toolAvailableOrCI(mandoc), "needs mandoc (apt-get install mandoc; with CI=true its absence is a failure)"))
    func lint() throws {
        try #require(toolExists(Self.mandoc), "\(Self.mandoc) is missing")
        let present = try FileManager.default.contentsOfDirectory(atPath: Self.directory).sorted()
        #expect(present == Self.pages.sorted())
        for name in Self.pages {
            let run = try runCommand([Self.mandoc, "-T", "lint", "-W", "all", Self.directory + "/" + name])
            let findings = run.output.split(separator: "\n").filter {
                !$0.contains("STYLE: referenced manual not found") && !$0.contains("outdated mandoc.db")
            }
            #expect(findings.isEmpty, "\(name):\n\(findings.joined(separator: "\n"))")
            // Its NAME and title match the file.
            let lines = try Self.page(name)
            let title = name.split(separator: ".").dropLast().joined(separator: ".")
            #expect(lines.contains(".Nm \(title)"), "\(name): .Nm \(title)")
            #expect(lines.contains { $0.hasPrefix(".Dt \(title.uppercased()) \(name.split(separator: ".").last!)") }, "\(name): .Dt")
        }
    }

    @Test("the pages refer to one another by the names and sections they have")
    func crossReferences() throws {
        let own = Set(Self.pages.map { page -> String in
            let parts = page.split(separator: ".")
            return parts.dropLast().joined(separator: ".") + " " + parts.last!
        })
        for name in Self.pages {
            for line in try Self.page(name) where line.hasPrefix(".Xr ") {
                let words = line.split(separator: " ")
                let reference = "\(words[1]) \(words[2])"
                if own.contains(where: { $0.hasPrefix(words[1] + " ") }) {
                    #expect(own.contains(reference), "\(name): \(line)")
                }
            }
        }
    }

    @Test("voipd(8) names exactly the flags `voipd --help` lists")
    func daemonFlags() throws {
        let usage = try runCommand([Binaries.voipd, "--help"]).output
        var accepted = Set(usage.split(whereSeparator: { " []\n,".contains($0) }).filter { $0.hasPrefix("-") && $0.count > 1 }
            .map { String($0.prefix { $0 != "=" }) })
        // --help printed it; -h prints the same.
        accepted.insert("--help")
        if try runCommand([Binaries.voipd, "-h"]).output == usage { accepted.insert("-h") }
        let documented = Self.options(try Self.page("voipd.8"))
        #expect(accepted.contains("--version") && accepted.contains("--check-config"))
        #expect(documented == accepted, "only in the page: \(documented.subtracting(accepted)); only in --help: \(accepted.subtracting(documented))")
    }

    @Test("voipctl(1) describes every verb voipctl accepts, with exactly its options, and the common options")
    func controlVerbs() throws {
        let general = try runCommand([Binaries.voipctl, "--help"]).output
        let verbs = general.split(separator: "\n").filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") }
            .compactMap { $0.split(separator: " ").first.map(String.init) }
        // The common options: the usage lines at the top, and --help, which every verb takes.
        let synopsis = general.split(separator: "\n", omittingEmptySubsequences: false).prefix { !$0.isEmpty }.joined(separator: " ")
        var globals = Set(synopsis.split(whereSeparator: { " []".contains($0) }).filter { $0.hasPrefix("--") }.map(String.init))
        if general.contains("Every verb takes --help") { globals.insert("--help") }
        #expect(globals == ["--socket", "--json", "--version", "--help"], "\(globals)")

        let lines = try Self.page("voipctl.1")
        #expect(Self.options(Self.section(lines, "OPTIONS")) == globals.union(["-h"]))
        // COMMANDS: each `.It Cm VERB` of the outer list, with the lines up to the next one.
        var documented: [String: Set<String>] = [:]
        var depth = 0
        var current: String?
        for line in Self.section(lines, "COMMANDS") {
            if line.hasPrefix(".Bl ") { depth += 1 }
            if line.hasPrefix(".El") { depth -= 1 }
            if depth == 1 && line.hasPrefix(".It Cm ") {
                current = String(line.split(separator: " ")[2])
            }
            if let current { documented[current, default: []].formUnion(Self.options([line])) }
        }
        #expect(Set(documented.keys) == Set(verbs), "only in the page: \(Set(documented.keys).subtracting(verbs)); only in --help: \(Set(verbs).subtracting(documented.keys))")
        for verb in verbs {
            let help = try runCommand([Binaries.voipctl, verb, "--help"]).output
            var accepted: Set<String> = []
            for line in help.split(separator: "\n") where line.hasPrefix("  -") {
                for word in line.split(separator: " ").prefix(2) where word.hasPrefix("-") {
                    accepted.insert(word.trimmingCharacters(in: CharacterSet(charactersIn: ",")))
                }
            }
            // `launch -- CMD` shows `Fl -` for the separator; the common options may be named too.
            let named = (documented[verb] ?? []).subtracting(globals).subtracting(["--"])
            #expect(named == accepted, "voipctl \(verb): only in the page: \(named.subtracting(accepted)); only in --help: \(accepted.subtracting(named))")
        }
    }

    @Test("voipd.json(5) describes every configuration key and every duration the code knows")
    func configurationKeys() throws {
        let lines = try Self.page("voipd.json.5")
        #expect(Self.items(Self.section(lines, "Keys")).sorted() == (try DeployTests.knownKeys(configuration: #"{"zzz": 1}"#)))
        #expect(Self.items(Self.section(lines, "Durations")).sorted() == LifecycleTimings.names.sorted())
        // Each duration with the code's default.
        let defaults = LifecycleTimings()
        let durations = Self.section(lines, "Durations")
        for (name, keyPath) in LifecycleTimings.durations {
            guard let index = durations.firstIndex(of: ".It Ic \(name)"), index + 1 < durations.count else { continue }
            let seconds = defaults[keyPath: keyPath].seconds
            let text = seconds == seconds.rounded() ? "\(Int(seconds))" : "\(seconds)"
            #expect(durations[index + 1].hasPrefix("\(text):"), "\(name): default \(text) s, the page says \(durations[index + 1])")
        }
    }

    @Test("voipd-manifest(5) describes every manifest key the code knows")
    func manifestKeys() throws {
        let lines = try Self.page("voipd-manifest.5")
        #expect(Self.items(Self.section(lines, "Keys")).sorted() == (try DeployTests.knownKeys(manifest: #"{"command": "x", "zzz": 1}"#)))
    }

    /// The identifiers starting with `prefix` in a C text or a page.
    static func constants(_ prefix: String, in text: String) -> Set<String> {
        let words = text.split(whereSeparator: { character in !(character.isLetter || character.isNumber || character == "_") })
        return Set(words.filter { $0.hasPrefix(prefix) }.map { String($0) })
    }

    @Test("libvoipd(3) names every function of voipd.h in its synopsis, and every refusal and event kind")
    func libraryFunctions() throws {
        let lines = try Self.page("libvoipd.3")
        let synopsis = Set(Self.section(lines, "SYNOPSIS").filter { $0.hasPrefix(".Fn ") }.map { String($0.split(separator: " ")[1]) })
        #expect(synopsis == (try LibvoipdTests.declaredFunctions()))
        let header = try String(contentsOfFile: LibvoipdTests.sources + "/include/voipd.h", encoding: .utf8)
        let page = lines.joined(separator: "\n")
        for prefix in ["VOIPD_ERR_", "VOIPD_EVENT_"] {
            let declared = Self.constants(prefix, in: header)
            let named = Self.constants(prefix, in: page)
            #expect(declared.count >= 8)
            #expect(named == declared, "\(prefix): only in voipd.h: \(declared.subtracting(named)); only in the page: \(named.subtracting(declared))")
        }
    }
}
