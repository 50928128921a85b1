import Foundation
import Glibc
import Testing
import VoipdDaemon
import VoipdLifecycle
import VoipdTestSupport

/// Deploy/ and docs/CONFIGURATION.md against the code: the systemd units pass systemd's own
/// checks (the same script CI runs), the example configuration and manifest have every key
/// with the code's defaults and pass `voipd --check-config`, and the document names every
/// key, duration and flag with its default.
@Suite("Deploy files and configuration reference")
struct DeployTests {
    static let root = packageDirectory
    static let deploy = root + "/Deploy"
    static let analyze = "/usr/bin/systemd-analyze"

    @Test("the units, sysusers.d and tmpfiles.d files pass systemd-analyze verify and security, systemd-sysusers and systemd-tmpfiles (Deploy/check-units.sh)",
          .enabled(if: toolAvailableOrCI(analyze), "needs systemd-analyze (apt-get install systemd; with CI=true its absence is a failure)"))
    func unitsVerify() throws {
        try #require(toolExists(Self.analyze), "\(Self.analyze) is missing")
        let checked = try runCommand(["/bin/bash", Self.deploy + "/check-units.sh", Binaries.directory], timeout: .seconds(120))
        #expect(checked.status == 0, "Deploy/check-units.sh:\n\(checked.output)")
    }

    /// The keys voipd knows, from the error it gives for an unknown one: `json` puts the
    /// unknown key where the list is wanted.
    static func knownKeys(configuration json: String? = nil, manifest: String? = nil) throws -> [String] {
        let directory = try makeTemporaryDirectory("voipd-keys")
        defer { removeTree(directory) }
        mkdir(directory + "/apps.d", 0o755)
        if let json { try Data(json.utf8).write(to: URL(fileURLWithPath: directory + "/voipd.json")) }
        if let manifest { try Data(manifest.utf8).write(to: URL(fileURLWithPath: directory + "/apps.d/probe.json")) }
        let result = try runCommand([Binaries.voipd, "--socket", directory + "/voipd.sock", "--apps-directory", directory + "/apps.d", "--check-config"]
                                    + (json == nil ? [] : ["--config", directory + "/voipd.json"]))
        guard let start = result.output.range(of: "(known: "), let end = result.output[start.upperBound...].firstIndex(of: ")") else {
            throw TimedOut(description: "no list of known keys in: \(result.output)")
        }
        return result.output[start.upperBound..<end].components(separatedBy: ", ")
    }

    static func object(_ path: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }

    @Test("Deploy/voipd.json sets every key and every duration to the code's default, and voipd --check-config accepts it")
    func exampleConfiguration() throws {
        let file = try Self.object(Self.deploy + "/voipd.json")
        #expect(file.keys.sorted() == (try Self.knownKeys(configuration: #"{"zzz": 1}"#)))
        let timings = try #require(file["timings"] as? [String: Double])
        #expect(timings.keys.sorted() == LifecycleTimings.names.sorted())
        let defaults = LifecycleTimings()
        for (name, keyPath) in LifecycleTimings.durations {
            #expect(timings[name] == defaults[keyPath: keyPath].seconds, "timings.\(name)")
        }
        #expect(timings["reclaimAfterSuspension"] == (defaults.reclaimAfterSuspension?.seconds ?? 0))
        #expect(timings["hibernateAfterSuspension"] == (defaults.hibernateAfterSuspension?.seconds ?? 0))
        let hibernation = try #require(file["hibernation"] as? [String: Any])
        #expect(Set(hibernation.keys) == HibernationFile.keys)
        let resolved = HibernationFile(dirtyLimitMB: hibernation["dirtyLimitMB"] as? Double, sliceMB: hibernation["sliceMB"] as? Double)
        #expect(try resolved.resolve().get() == HibernationSettings())
        let limits = try #require(file["limits"] as? [String: Double])
        #expect(limits.keys.sorted() == DaemonLimits.names.sorted())
        for name in DaemonLimits.names { #expect(limits[name] == DaemonLimits().value(name), "limits.\(name)") }

        let daemon = DaemonConfiguration(socketPath: "/")
        #expect(file["socket"] as? String == "/run/voipd/voipd.sock")
        #expect((file["socketMode"] as? String).flatMap { UInt32($0, radix: 8) } == daemon.socketMode)
        #expect((file["logLevel"] as? String).flatMap(LogLevel.init(name:)) == daemon.logLevel)
        #expect(file["timeScale"] as? Double == daemon.timeScale)
        #expect(file["socketQuota"] as? Int == daemon.socketQuota)
        #expect(file["reclaimQueuedBytes"] as? Int == daemon.reclaimQueuedBytes)
        #expect(file["eventHistory"] as? Int == daemon.eventHistory)
        #expect(file["memoryPressureTrigger"] as? String == daemon.memoryPressureTrigger)
        #expect(file["appsDirectory"] as? String == daemon.appsDirectory)
        // The default is the socket's directory.
        #expect(file["stateDirectory"] as? String == "/run/voipd")

        let checked = try runCommand([Binaries.voipd, "--config", Self.deploy + "/voipd.json", "--apps-directory", "/nonexistent", "--check-config"])
        #expect(checked.status == 0, "\(checked.output)")
    }

    @Test("Deploy/apps.d/softphone.json sets every manifest key but adoption's, baresip.json those, and both pass voipd --check-config (their users replaced by one that exists here)",
          arguments: ["softphone", "baresip"])
    func exampleManifest(_ example: String) throws {
        let manifest = try Self.object(Self.deploy + "/apps.d/\(example).json")
        let adoptionKeys = ["adopt", "keepAliveSeconds", "quietCPUMillisecondsPerSecond", "quietWakeupsPerSecond", "quietWindowSeconds"]
        let known = try Self.knownKeys(manifest: #"{"command": "x", "zzz": 1}"#)
        #expect(adoptionKeys.allSatisfy(known.contains))
        if example == "softphone" {
            #expect(manifest.keys.sorted() == known.filter { !adoptionKeys.contains($0) })
            #expect(manifest["command"] as? String == "/usr/local/bin/softphone")
        } else {
            #expect(adoptionKeys.allSatisfy(manifest.keys.contains), "an unmodified program, adopted")
        }

        // A root voipd runs it as "nobody" here; another runs it as itself.
        var local = manifest
        local["user"] = getuid() == 0 ? "nobody" : nil
        local["workingDirectory"] = "/"
        let directory = try makeTemporaryDirectory("voipd-manifest")
        defer { removeTree(directory) }
        mkdir(directory + "/apps.d", 0o755)
        try JSONSerialization.data(withJSONObject: local).write(to: URL(fileURLWithPath: directory + "/apps.d/\(example).json"))
        let checked = try runCommand([Binaries.voipd, "--config", Self.deploy + "/voipd.json", "--apps-directory", directory + "/apps.d", "--check-config"])
        #expect(checked.status == 0, "\(checked.output)")
    }

    @Test("docs/CONFIGURATION.md describes every key, manifest key and flag, and every duration with its default")
    func referenceIsComplete() throws {
        let document = try String(contentsOfFile: Self.root + "/docs/CONFIGURATION.md", encoding: .utf8)
        let rows = document.split(separator: "\n").filter { $0.hasPrefix("| `") }
        func row(_ name: String) -> Substring? { rows.first { $0.hasPrefix("| `\(name)` |") } }
        for key in try Self.knownKeys(configuration: #"{"zzz": 1}"#) {
            #expect(row(key) != nil, "configuration key \(key)")
        }
        for key in try Self.knownKeys(manifest: #"{"command": "x", "zzz": 1}"#) {
            #expect(row(key) != nil, "manifest key \(key)")
        }
        let defaults = LifecycleTimings()
        for (name, keyPath) in LifecycleTimings.durations {
            let seconds = defaults[keyPath: keyPath].seconds
            let text = seconds == seconds.rounded() ? "\(Int(seconds))" : "\(seconds)"
            #expect(row(name)?.hasPrefix("| `\(name)` | \(text) |") == true, "duration \(name): default \(text) s")
        }
        #expect(row("reclaimAfterSuspension")?.hasPrefix("| `reclaimAfterSuspension` | 0 (never) |") == true)
        for name in DaemonLimits.names {
            let value = DaemonLimits().value(name) ?? -1
            #expect(row(name)?.hasPrefix("| `\(name)` | \(Int(value)) |") == true, "limit \(name): default \(Int(value))")
        }
        let daemon = DaemonConfiguration(socketPath: "/")
        #expect(row("socketQuota")?.contains("| `\(daemon.socketQuota)` |") == true)
        #expect(row("eventHistory")?.contains("| `\(daemon.eventHistory)` |") == true)
        #expect(row("memoryPressureTrigger")?.contains("| `\"\(daemon.memoryPressureTrigger ?? "")\"` |") == true)
        #expect(row("appsDirectory")?.contains("| `\"\(daemon.appsDirectory)\"` |") == true)
        #expect(row("socketMode")?.contains("| `\"0\(String(daemon.socketMode, radix: 8))\"` |") == true)

        let usage = try runCommand([Binaries.voipd, "--help"]).output
        let flags = Set(usage.split(whereSeparator: { " []\n".contains($0) }).filter { $0.hasPrefix("--") && $0.count > 2 }.map(String.init))
        #expect(!flags.isEmpty)
        for flag in flags.sorted() {
            #expect(document.contains("`\(flag)"), "flag \(flag)")
        }
    }
}
