import Foundation
import Glibc
import Testing
@testable import VoipdDaemon

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
}
