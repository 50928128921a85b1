import Foundation
import Glibc
import Testing
@testable import VoipdDaemon
import VoipdLifecycle

@Suite("The apps directory")
struct ManifestCatalogTests {
    @Test("no apps directory is no manifests and no error; one that cannot be read is an error, not an empty directory")
    func unreadableDirectory() throws {
        var template = Array("/tmp/voipd-manifests-test.XXXXXX".utf8CString)
        let directory = try #require(mkdtemp(&template).map { String(cString: $0) })
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let absent = ManifestCatalog.load(directory + "/apps.d", socketQuota: 4)
        #expect(absent.manifests.isEmpty && absent.errors.isEmpty)

        #expect(FileManager.default.createFile(atPath: directory + "/apps.d", contents: Data("{}".utf8)))
        let notADirectory = ManifestCatalog.load(directory + "/apps.d", socketQuota: 4)
        #expect(notADirectory.manifests.isEmpty)
        #expect(notADirectory.errors.map(\.description).contains { $0.contains("appsDirectory") && $0.contains(directory + "/apps.d") },
                "\(notADirectory.errors)")
    }

    @Test("keepAliveMinimum lowers one app's minimum, in the app's own seconds (scaled like its requests), never below keepAliveFloor")
    func keepAliveMinimum() throws {
        var template = Array("/tmp/voipd-manifests-test.XXXXXX".utf8CString)
        let directory = try #require(mkdtemp(&template).map { String(cString: $0) })
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func resolve(_ minimum: Double, timeScale: Double = 1) throws(ConfigurationError) -> ResolvedManifest {
            let path = directory + "/phone.json"
            _ = FileManager.default.createFile(atPath: path, contents: Data(#"{"command": "/bin/true", "keepAliveMinimum": \#(minimum)}"#.utf8))
            return try ManifestCatalog.resolve(path: path, socketQuota: 4, timings: LifecycleTimings().scaled(by: timeScale), timeScale: timeScale)
        }
        #expect(try resolve(120).policy.keepAliveMinimum == .seconds(120))
        #expect(try resolve(60).policy.keepAliveMinimum == .seconds(60), "the default floor itself")
        #expect(try resolve(120, timeScale: 0.1).policy.keepAliveMinimum == .seconds(12), "scaled as the app's keep-alive requests are")
        let below = #expect(throws: ConfigurationError.self) { try resolve(59) }
        #expect(below?.description.contains("keepAliveMinimum") == true && below?.description.contains("60…") == true, "\(String(describing: below))")
        #expect(throws: ConfigurationError.self, "the floor is the app's 60 s at any scale") { try resolve(59, timeScale: 0.1) }
        let absent = try ManifestCatalog.resolve(path: {
            let path = directory + "/plain.json"
            _ = FileManager.default.createFile(atPath: path, contents: Data(#"{"command": "/bin/true"}"#.utf8))
            return path
        }(), socketQuota: 4)
        #expect(absent.policy.keepAliveMinimum == nil, "the daemon's keepAliveMinimum applies")
    }

    @Test("the keep-alive warning: none when the keep-alive covers the app; otherwise what lapses and how to fix it (a shorter keep-alive, the manifest, or the registrar)")
    func keepAliveCoverage() {
        #expect(KeepAliveCoverage(interval: 600, minimum: 600, floor: 60, reachableFor: 600).warning == nil)
        #expect(KeepAliveCoverage(interval: 60, minimum: 60, floor: 60, reachableFor: 3000).warning == nil)
        let tooLong = KeepAliveCoverage(interval: 900, minimum: 600, floor: 60, reachableFor: 700).warning
        #expect(tooLong?.contains("its keep-alive is 900 s") == true && tooLong?.contains("up to 200 s") == true
                && tooLong?.contains("may ask for a keep-alive of 700 s") == true, "\(tooLong ?? "nil")")
        let manifest = KeepAliveCoverage(interval: 600, minimum: 600, floor: 60, reachableFor: 87.5).warning
        #expect(manifest?.contains("shortest keep-alive it may have is 600 s") == true && manifest?.contains("up to 512.5 s") == true
                && manifest?.contains(#""keepAliveMinimum": 87"#) == true && manifest?.contains("keepAliveFloor, 60 s") == true, "\(manifest ?? "nil")")
        let floor = KeepAliveCoverage(interval: 600, minimum: 600, floor: 60, reachableFor: 25).warning
        #expect(floor?.contains("no manifest may go below keepAliveFloor (60 s)") == true && floor?.contains("registrar's grant") == true,
                "\(floor ?? "nil")")
    }
}
