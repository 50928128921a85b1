import Foundation
import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport

/// `voip-demo` itself, as `swift run voip-demo` runs it: it succeeds and stops what it
/// started, and what it prints reads well: every line within 100 columns, the report's
/// tables, picture and figures there and consistent, colour only on a terminal.
@Suite("Softphone demo", .serialized)
struct SoftphoneDemoTests {
    static let width = 100

    /// The pids of the processes the demo started, from its "How it ran" section.
    static func startedPIDs(_ output: String) -> [pid_t] {
        let lines = output.split(separator: "\n").drop { !$0.hasPrefix("How it ran") }.prefix { !$0.isEmpty }
        return lines.flatMap { line in
            line.split(separator: "pid ").dropFirst().compactMap { pid_t($0.prefix { $0.isNumber }) }
        }
    }

    /// The lines wider than the demo may print.
    static func tooWide(_ output: String) -> [String] {
        output.split(separator: "\n").map(String.init).filter { $0.count > width }
    }

    /// Runs the demo with its output in a file (no terminal); checks it succeeded, printed
    /// no escape sequence and no line too wide, and left none of its processes running.
    static func runDemo(_ arguments: [String] = []) throws -> String {
        let (status, output) = try runCommand([Binaries.path("voip-demo")] + arguments, timeout: .seconds(90))
        #expect(status == 0, "voip-demo failed:\n\(output)")
        #expect(output.split(separator: "\n").last == "voip-demo: OK" || output.contains("\nvoip-demo: OK   (--verbose"))
        #expect(!output.contains("\u{1B}"), "no colour without a terminal")
        #expect(tooWide(output).isEmpty, "lines wider than \(width) columns:\n\(tooWide(output).joined(separator: "\n"))")
        checkStopped(output)
        return output
    }

    static func checkStopped(_ output: String) {
        let pids = startedPIDs(output)
        #expect(pids.count == 4, "voipd, the softphone (or baresip) and two callers: \(pids)")
        for pid in pids {
            let state = processState(pid)
            #expect(state == nil || state == "Z", "pid \(pid) is still running (\(state.map(String.init) ?? ""))")
        }
    }

    /// Milliseconds in a cell such as "303.9 ms".
    static func milliseconds(_ text: Substring) -> Double? {
        text.split(separator: " ").first.flatMap { Double($0) }
    }

    /// The report: each call's table (in order, times rising), the picture of the states,
    /// the cost of the idle second running and suspended.
    /// `adopted`: the story with baresip (no screen lock; idle, baresip costs nothing either).
    static func checkReport(_ output: String, embeddedRegistrar: Bool, adopted: Bool = false) throws {
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
        for number in 1...2 {
            let start = try #require(lines.firstIndex { $0.hasPrefix("Call \(number): ") }, "call \(number)'s table")
            #expect(lines[start + 1].hasPrefix("  step") && lines[start + 1].contains("after the INVITE"))
            let rows = Array(lines[(start + 2)...].prefix(5))
            let steps = ["state before", "INVITE → resumed", "→ 180 Ringing", "→ 200 OK", "state after"]
            #expect(rows.count == 5)
            for (row, step) in zip(rows, steps) { #expect(row.hasPrefix("  " + step + " "), "\(row) is not \(step)") }
            #expect(rows.first?.hasSuffix("suspended (kernel state T: stopped)") == true)
            #expect(rows.last?.hasSuffix("suspended again, the call over") == true)
            // The times after the INVITE. The resume is voipd's record of it, stamped after it
            // sent SIGCONT: the 180 from the softphone may reach the caller first. Our
            // softphone answers 300 ms later; baresip (adopted) answers at once, so its 200 may
            // carry the 180's stamp at the table's 0.1 ms resolution. The suspension after the
            // call comes once it has been held a second.
            let times = rows.dropFirst().compactMap { row in
                row.range(of: #"\d+\.\d+ ms"#, options: .regularExpression).flatMap { milliseconds(row[$0]) }
            }
            #expect(times.count == 4, "call \(number): \(rows)")
            if times.count == 4 {
                let answered = adopted ? times[1] <= times[2] : times[1] < times[2]
                #expect(times[0] > 0 && times[1] > 0 && times[0] < times[2] && answered && times[2] < times[3], "call \(number): \(times)")
            }
            if embeddedRegistrar {
                #expect(lines[start + 7].contains("over the softphone's REGISTER connection (#"))
            }
        }

        // The picture: launched active, suspended, then woken by the calls; marks in order.
        let picture = try #require(lines.firstIndex { $0.hasPrefix("  softphone  ") && !$0.contains("pid") })
        let cells = lines[picture].dropFirst("  softphone  ".count)
        #expect(cells.count == width - "  softphone  ".count)
        #expect(cells.allSatisfy { "█▓░▲ ".contains($0) }, "\(cells)")
        #expect(cells.first == "█")
        let suspended = try #require(cells.firstIndex(of: "░"))
        let woken = try #require(cells.firstIndex(of: "▲"))
        #expect(cells.firstIndex(of: "█")! < suspended && suspended < woken)
        let marks = lines[picture + 1]
        let expected = adopted ? ["b", "1", "2"] : ["b", "1", "L", "2"]
        let order = expected.compactMap { marks.firstIndex(of: Character($0)) }
        #expect(order.count == expected.count && order == order.sorted(), "marks: \(marks)")
        #expect(lines[picture + 2].contains("█ active") && lines[picture + 2].contains("▲ woken by a call"))

        // Why it matters: the running softphone costs CPU and wake-ups; suspended, none.
        let cost = try #require(lines.firstIndex { $0.hasPrefix("Why it matters: the softphone over 1 s") })
        let running = lines[cost + 2].split(separator: " ")
        let idle = lines[cost + 3].split(separator: " ")
        #expect(running.first == "running" && idle.first == "suspended")
        if !adopted { #expect((Double(running[1]) ?? 0) > 0 && (Int(running[3]) ?? 0) > 0, "\(lines[cost + 2])") }
        #expect(idle[1] == "0.00" && idle[3] == "0", "\(lines[cost + 3])")

        #expect(output.contains("With Kamailio: ") == (embeddedRegistrar && KamailioServer.isInstalled))
    }

    @Test("voip-demo exits 0 with the embedded registrar and stops every process it started; its report has each call's table, the picture of the states and the cost of the idle second, within 100 columns")
    func demoWithEmbeddedRegistrar() throws {
        let output = try Self.runDemo()
        try Self.checkReport(output, embeddedRegistrar: true)
        #expect(!output.contains("== Timeline"), "the full timeline only with --verbose")
        #expect(output.hasPrefix("voip-demo: voipd suspends a softphone in the background and wakes it for a call\n\nCall 1: "),
                "it leads with what happened")
    }

    @Test("voip-demo --softphone baresip: the same story with the unmodified baresip, adopted by voipd; its summary says so and lists the sockets voipd held; every process stopped",
          .enabled(if: toolAvailableOrCI(Baresip.binary), "needs baresip-core (with CI=true its absence is a failure)"))
    func demoWithBaresip() throws {
        let output = try Self.runDemo(["--softphone", "baresip"])
        try Self.checkReport(output, embeddedRegistrar: true, adopted: true)
        #expect(output.hasPrefix("voip-demo: voipd adopts baresip, unmodified: suspends it in the background and wakes it for a call\n\nCall 1: "))
        let lines = output.split(separator: "\n")
        let adoption = try #require(lines.firstIndex { $0.hasPrefix("Adoption: voipd found baresip's SIP sockets itself") })
        let held = lines[(adoption + 2)...].prefix { $0.hasPrefix("    ") }
        #expect(held.contains { $0.contains(" connected ") && $0.contains("(sip:port=") }, "its REGISTER connection: \(held)")
        #expect(held.contains { $0.contains(" listening ") }, "its SIP listener: \(held)")
        #expect(!output.contains("Screen lock"), "no lock in this story")
        #expect(output.contains("baresip was not changed in any way and does not speak voipd's protocol: voipd adopted it."))
    }

    @Test("--help explains --time-scale and --verbose, within 100 columns")
    func help() throws {
        let (status, output) = try runCommand([Binaries.path("voip-demo"), "--help"])
        #expect(status == 0)
        #expect(output.hasPrefix("usage: voip-demo "))
        #expect(output.contains("--time-scale FACTOR    multiply every duration of voipd's lifecycle by FACTOR"))
        #expect(output.contains("30 s of") && output.contains("(a wake gets 6 s, not 30)"))
        #expect(output.contains("--verbose "))
        #expect(output.contains("--softphone NAME"))
        #expect(Self.tooWide(output).isEmpty, "\(Self.tooWide(output))")
        let wrong = try runCommand([Binaries.path("voip-demo"), "--time-scale", "2"])
        #expect(wrong.status == 2 && wrong.output.contains("--time-scale needs a number more than 0 and at most 1"))
    }

    /// Runs the demo in a terminal (tmux, wider than the demo may print); the whole output
    /// with its SGR sequences, and as text.
    static func runInTerminal(_ command: String) throws -> (coloured: String, text: String) {
        let directory = try makeTemporaryDirectory("voip-demo-tty")
        defer { removeTree(directory) }
        let script = directory + "/run.sh"
        try "\(command)\necho \"exit $?\"\nexec cat\n".write(toFile: script, atomically: true, encoding: .utf8)
        let tmux = try TmuxSession("bash \(script)", width: 160, height: 50)
        defer { tmux.stop() }
        try tmux.waitForScreen("the demo's end", timeout: .seconds(90)) { lines in lines.contains { $0.hasPrefix("exit ") } }
        let coloured = try tmux.screen(attributes: true, history: true).joined(separator: "\n")
        let text = try tmux.screen(history: true).joined(separator: "\n")
        #expect(text.contains("\nexit 0"), "voip-demo failed:\n\(text)")
        return (coloured, text)
    }

    @Test("on a terminal: in colour, the progress line gone once the report is printed; with NO_COLOR and --verbose: no colour, every step and the timeline",
          .enabled(if: toolAvailableOrCI(TmuxSession.binary), "needs tmux (apt-get install tmux; with CI=true its absence is a failure)"))
    func terminal() throws {
        let demo = Binaries.path("voip-demo")
        let coloured = try Self.runInTerminal("env -u NO_COLOR TERM=xterm-256color \(demo)")
        #expect(coloured.coloured.contains("\u{1B}[1mCall 1"), "the headings in bold")
        #expect(coloured.coloured.contains("\u{1B}[32m█"), "the active state in green")
        #expect(coloured.coloured.contains("voip-demo: OK"))
        #expect(Self.tooWide(coloured.text).isEmpty, "\(Self.tooWide(coloured.text))")
        #expect(!coloured.text.contains("…\n") && !coloured.text.contains("Measure the softphone"), "the progress line was cleared")
        try Self.checkReport(coloured.text, embeddedRegistrar: true)
        Self.checkStopped(coloured.text)

        let plain = try Self.runInTerminal("NO_COLOR=1 \(demo) --verbose")
        #expect(!plain.coloured.contains("\u{1B}["), "NO_COLOR: no escape sequence")
        #expect(Self.tooWide(plain.text).isEmpty, "\(Self.tooWide(plain.text))")
        #expect(plain.text.contains("== Launch the softphone under voipd, in the foreground"))
        #expect(plain.text.contains("the INVITE went out on the REGISTER connection"))
        #expect(plain.text.contains("== Timeline (milliseconds since the demo started)"))
        try Self.checkReport(plain.text, embeddedRegistrar: true)
        Self.checkStopped(plain.text)
    }
}
