import Foundation
import Glibc
import Testing
import VoipClient
import VoipdProtocol
import VoipdTestSupport

/// `voipctl`, the command-line tool: its output, its exit statuses, its refusals.
@Suite("voipctl", .serialized)
struct ControlToolTests {
    static func voipctl(_ harness: DaemonHarness, _ arguments: String...) throws -> (status: Int32, output: String) {
        try runCommand([Binaries.voipctl, "--socket", harness.socketPath] + arguments)
    }

    @Test("launch prints the name; status --json has the fields scripts rely on")
    func launchAndStatus() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let launched = try Self.voipctl(harness, "launch", "--name", "sleeper", "--no-protocol", "--", "/bin/sleep", "300")
        #expect(launched.status == 0)
        #expect(launched.output == "sleeper\n")
        let status = try Self.voipctl(harness, "status", "--json")
        #expect(status.status == 0)
        let json = try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any]
        let apps = json?["apps"] as? [[String: Any]] ?? []
        #expect(apps.count == 1)
        let app = apps.first ?? [:]
        #expect(app["name"] as? String == "sleeper")
        #expect((app["pid"] as? Int ?? 0) > 0)
        #expect(app["state"] as? String == "active")
        #expect(app["voipSockets"] as? Int == 0)
        #expect(app["wakes"] as? Int == 0)
        let table = try Self.voipctl(harness, "status")
        #expect(table.output.hasPrefix("NAME"))
        #expect(table.output.contains("sleeper"))
    }

    @Test("sockets shows each held socket's kind with its role, and what waits: bytes, or a listener's connections")
    func socketKinds() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        _ = try UpgradeTests.appServing(harness)
        let table = try Self.voipctl(harness, "sockets", "phone").output
        let lines = table.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("APP") == true, "\(table)")
        #expect(lines.contains { $0.contains("datagrams") && $0.contains("udp unconnected") && $0.contains("0 bytes") }, "\(table)")
        #expect(lines.contains { $0.contains("listener ") && $0.contains("tcp listening") && $0.contains("0 connections") }, "\(table)")
    }

    @Test("an app that does not speak the protocol is suspended and resumed all the same")
    func silentApp() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        _ = try Self.voipctl(harness, "launch", "--name", "sleeper", "--no-protocol", "--", "/bin/sleep", "300")
        let pid = try #require(try harness.status("sleeper").pid)
        #expect(try Self.voipctl(harness, "background", "sleeper").status == 0)
        try harness.waitForState("sleeper", .suspended)
        #expect(processState(pid) == "T")
        #expect(try Self.voipctl(harness, "foreground", "sleeper").status == 0)
        try harness.waitForState("sleeper", .active)
        #expect(processState(pid) != "T")
        #expect(try Self.voipctl(harness, "kill", "sleeper").status == 0)
        let ended = try harness.waitForState("sleeper", .terminated)
        #expect(ended.reason.hasPrefix("forceQuit"))
    }

    @Test("exit statuses: 3 for no such app or no daemon, 2 for usage, 1 for a refusal")
    func exitStatuses() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let missing = try Self.voipctl(harness, "background", "ghost")
        #expect(missing.status == 3)
        #expect(missing.output.contains("no app named ghost"))
        #expect(try Self.voipctl(harness, "frobnicate").status == 2)
        #expect(try Self.voipctl(harness, "launch", "/bin/true").status == 2, "the command goes after --")
        #expect(try Self.voipctl(harness, "background").status == 2)
        _ = try Self.voipctl(harness, "launch", "--name", "sleeper", "--no-protocol", "--", "/bin/sleep", "300")
        let refused = try Self.voipctl(harness, "reclaim", "sleeper")
        #expect(refused.status == 1)
        #expect(refused.output.contains("suspended"))
        let nobody = try runCommand([Binaries.voipctl, "--socket", harness.directory + "/nothing.sock", "status"])
        #expect(nobody.status == 3)
        #expect(nobody.output.contains("voipd is not running"))
    }

    @Test("every verb has --help")
    func help() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        for verb in ["launch", "status", "sockets", "background", "foreground", "interrupt", "interrupt-end", "terminate",
                     "kill", "reclaim", "forget", "lock", "unlock", "memory-pressure", "events", "stats", "upgrade", "completion"] {
            let help = try Self.voipctl(harness, verb, "--help")
            #expect(help.status == 0, "\(verb)")
            #expect(help.output.hasPrefix("usage: voipctl \(verb)"), "\(verb)")
        }
        #expect(try Self.voipctl(harness, "--help").output.contains("Exit status"))
    }

    @Test("voipd --version and voipctl --version print the same release and the protocol version, and exit 0")
    func versions() throws {
        let daemon = try runCommand([Binaries.voipd, "--version"])
        let control = try runCommand([Binaries.voipctl, "--version"])
        #expect(daemon.status == 0 && control.status == 0)
        #expect(daemon.output == "voipd \(VoipdVersion.release) (protocol \(Frame.version))\n")
        #expect(control.output == "voipctl \(VoipdVersion.release) (protocol \(Frame.version))\n")
        #expect(VoipdVersion.release.split(separator: ".").count == 3 && VoipdVersion.release.allSatisfy { $0.isNumber || $0 == "." })
        // Anywhere among other options, as the usage says; not mistaken for a verb's option.
        #expect(try runCommand([Binaries.voipctl, "--json", "--version"]).output == control.output)
        #expect(try runCommand([Binaries.voipd, "--log-level", "debug", "--version"]).output == daemon.output)
    }

    @Test("options are checked against the verb: unknown ones, missing values and a command after -- where none is taken are usage errors (2)")
    func optionParsing() throws {
        for arguments in [["status", "--follow"], ["events", "--to"], ["kill", "--", "x"], ["launch", "--name", "--", "/bin/true"],
                          ["completion", "tcsh"], ["completion"], ["--frob", "status"]] {
            let run = try runCommand([Binaries.voipctl, "--socket", "/nonexistent/voipd.sock"] + arguments)
            #expect(run.status == 2, "voipctl \(arguments.joined(separator: " ")): \(run.output)")
            #expect(run.output.hasPrefix("voipctl: "), "\(arguments)")
        }
    }

    @Test("events prints one line per transition: time, app, from, to, reason")
    func events() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        _ = try Self.voipctl(harness, "launch", "--name", "sleeper", "--no-protocol", "--", "/bin/sleep", "300")
        let lines = try Self.voipctl(harness, "events").output.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(lines.first?.contains("sleeper  notRunning → active") == true)
        let json = try Self.voipctl(harness, "events", "--json", "sleeper").output
        let record = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        #expect(record?["app"] as? String == "sleeper")
        #expect(record?["from"] as? String == "notRunning")
        #expect(record?["to"] as? String == "active")
        #expect(record?["time"] is Double)
    }

    @Test("events --to keeps only transitions to the states asked for")
    func eventsFilteredByState() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        _ = try Self.voipctl(harness, "launch", "--name", "sleeper", "--no-protocol", "--", "/bin/sleep", "300")
        _ = try Self.voipctl(harness, "background", "sleeper")
        try harness.waitForState("sleeper", .suspended)
        let lines = try Self.voipctl(harness, "events", "--to", "suspended", "--to", "active").output.split(separator: "\n")
        #expect(lines.count == 2, "\(lines)")
        #expect(lines.allSatisfy { $0.contains("→ suspended") || $0.contains("→ active") })
        #expect(try Self.voipctl(harness, "events", "--to", "asleep").status == 2)
    }

    @Test("network and power: what voipctl sets stays over the system's until auto, field by field")
    func conditionsBackToAuto() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        func conditions(_ arguments: String...) throws -> TransferConditionsResult {
            let run = try runCommand([Binaries.voipctl, "--socket", harness.socketPath] + arguments + ["--json"])
            #expect(run.status == 0, "\(arguments): \(run.output)")
            return try JSONDecoder().decode(TransferConditionsResult.self, from: Data(run.output.utf8))
        }
        let system = try conditions("network", "--expensive", "auto", "--kind", "auto", "--available", "auto")
        #expect(system.networkOverridden == [] && !system.powerOverridden)
        let kind = system.networkKind == "cellular" ? "wifi" : "cellular"
        let set = try conditions("network", "--expensive", system.expensive ? "no" : "yes", "--kind", kind,
                                 "--available", system.networkAvailable ? "no" : "yes")
        #expect(set.networkKind == kind && set.expensive != system.expensive && set.networkAvailable != system.networkAvailable, "\(set)")
        #expect(set.networkOverridden == [.expensive, .kind, .available])
        // Back to auto, the kind set says whether it is expensive (expensiveNetworks: cellular).
        let kindOnly = try conditions("network", "--expensive", "auto")
        #expect(kindOnly.expensive == (kind == "cellular") && kindOnly.networkOverridden == [.kind, .available], "\(kindOnly)")
        #expect(try conditions("network", "--kind", "auto", "--available", "auto") == system)
        let text = try Self.voipctl(harness, "network", "--available", "no")
        #expect(text.status == 0 && text.output.contains("unavailable (available set by voipctl network)"), "\(text.output)")
        #expect(try Self.voipctl(harness, "network", "--available", "maybe").status == 2)

        #expect(try conditions("power", "--source", "battery").powerOverridden)
        let power = try conditions("power", "--source", "auto")
        #expect(!power.powerOverridden && power.power == system.power)

        // Refused, changing nothing: a field both given and auto, and auto as a kind.
        for setting in [NetworkSetting(available: true, auto: [.available]), NetworkSetting(kind: "auto")] {
            do {
                _ = try harness.control.setNetwork(setting)
                Issue.record("\(setting) was taken")
            } catch VoipdError.refused(let error) {
                #expect(error.code == .badRequest, "\(error)")
            }
        }
        #expect(try conditions("network", "--expensive", "auto").networkOverridden == [.available])
    }

    @Test("a list longer than one frame arrives whole, in several replies")
    func longLists() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let app = try harness.launchTestApp("chatty")
        // 1,000 transitions (the history kept) are far more than one 64 KiB frame holds.
        for _ in 0..<500 {
            try harness.control.command(.interrupt, "chatty")
            try app.expectEvent(.willResignActive)
            try harness.control.command(.interruptEnd, "chatty")
            try app.expectEvent(.didBecomeActive)
        }
        let events = try harness.control.events()
        #expect(events.count == 1000)
        #expect(events.last?.to == .active)
        let output = try Self.voipctl(harness, "events", "--json")
        #expect(output.status == 0)
        #expect(output.output.split(separator: "\n").count == 1000)
    }

    @Test("a verb on an app is refused to another uid", .enabled(if: getuid() == 0 && toolAvailableOrCI("/usr/bin/setpriv"), "needs root and setpriv"))
    func otherUsersApps() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        _ = try Self.voipctl(harness, "launch", "--name", "rootapp", "--no-protocol", "--", "/bin/sleep", "300")
        let asNobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", Binaries.voipctl, "--socket", harness.socketPath]
        let refused = try runCommand(asNobody + ["background", "rootapp"])
        #expect(refused.status == 1)
        #expect(refused.output.contains("permissionDenied"))
        let status = try runCommand(asNobody + ["status", "--json"])
        #expect(status.status == 0)
        #expect(status.output == #"{"apps":[]}"# + "\n", "another uid's apps are not shown")
        let lock = try runCommand(asNobody + ["lock"])
        #expect(lock.status == 1)
        #expect(try harness.status("rootapp").state == .active)
    }
}
