import Glibc
import VoipdSystem
import VoipdTestSupport

/// The test app run without voipd (`--without-voipd`), in its own session, for the tests of
/// the system layer: they stop, page out and resume it themselves.
final class StandaloneTestApp {
    let directory: String
    let process: TestProcess
    let handle: TestAppHandle

    init(name: String) throws {
        directory = try makeTemporaryDirectory("voipd-\(name)")
        do {
            let reports = try ReportServer(path: directory + "/reports.sock")
            process = try TestProcess([Binaries.testApp, "--report", reports.path, "--without-voipd"])
            handle = try reports.accept(name: name, timeout: .seconds(20))
            try handle.expect(\.hello)
        } catch {
            removeTree(directory)
            throw error
        }
    }

    var pid: pid_t { process.pid }

    /// Kills it (continued first if stopped) and removes its directory.
    func stop() {
        process.stop()
        removeTree(directory)
    }
}
