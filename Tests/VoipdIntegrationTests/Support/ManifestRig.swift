import Foundation
import Glibc
import VoipdTestSupport

/// A voipd whose apps directory holds one manifest for the test app, with `keys` (JSON
/// members, e.g. `"calls": false`) added, and that app launched by name and connected.
/// ``stop()`` ends the app and the daemon and removes the directory.
final class ManifestRig {
    let directory: String
    let reports: ReportServer
    let harness: DaemonHarness
    let app: TestAppHandle

    init(app name: String, keys: String, daemonArguments: [String] = []) throws {
        directory = try makeTemporaryDirectory("voipd-manifest")
        reports = try ReportServer(path: directory + "/report.sock")
        mkdir(directory + "/apps.d", 0o755)
        try Self.writeManifest(name, keys: keys, in: directory, reports: reports)
        harness = try DaemonHarness(arguments: daemonArguments + ["--apps-directory", directory + "/apps.d"])
        _ = try harness.control.launchManifest(name)
        app = try reports.accept(name: name, timeout: .seconds(20))
        try app.expect(\.hello)
    }

    private static func writeManifest(_ name: String, keys: String, in directory: String, reports: ReportServer) throws {
        let manifest = #"{"command": "\#(Binaries.testApp)", "arguments": ["--report", "\#(reports.path)"], \#(keys)}"#
        try manifest.write(toFile: directory + "/apps.d/\(name).json", atomically: true, encoding: .utf8)
    }

    /// Replaces the app's manifest with one with `keys`, and has voipd read it (SIGHUP).
    func rewriteManifest(keys: String) throws {
        try Self.writeManifest(app.name, keys: keys, in: directory, reports: reports)
        kill(harness.daemon.pid, SIGHUP)
    }

    func stop() {
        app.stopProcesses()
        harness.stop()
        removeTree(directory)
    }
}
