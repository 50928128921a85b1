import Foundation
import Glibc
import Testing
import VoipdTestSupport
import VoipdTransferService
import VoipdTransfers

/// The durable records, on a real file system.
@Suite("Transfer store")
struct StoreTests {
    private func task(_ id: UInt64) -> TransferTask {
        TransferTask(id: TransferTaskID(id), session: TransferSessionID(app: "phone", identifier: "bg"),
                     spec: .download("https://example.org/\(id)", to: "/home/phone/\(id)"), options: TransferOptions(),
                     createdAt: Date(timeIntervalSince1970: 1_800_000_000), discretionaryInferred: false, notBefore: nil)
    }

    @Test("records are written, read back, replaced and removed; the directory is private")
    func roundTrip() throws {
        let directory = try makeTemporaryDirectory("voipd-store")
        defer { removeTree(directory) }
        let store = try TransferStore(directory: directory + "/transfers")
        var state = TransferEngine.DurableState()
        state.nextTaskID = 9
        try store.save(state)
        try store.save(task(1))
        var second = task(2)
        try store.save(second)
        second.priority = 0.9
        try store.save(second)
        try store.forget(TransferTaskID(1))
        try store.forget(TransferTaskID(7))
        let contents = try store.load()
        #expect(contents.problems.isEmpty)
        #expect(contents.state?.nextTaskID == 9)
        #expect(contents.tasks == [second])
        var status = stat()
        #expect(stat(directory + "/transfers", &status) == 0 && status.st_mode & 0o777 == 0o700)
        #expect(stat(directory + "/transfers/tasks/2.json", &status) == 0 && status.st_mode & 0o777 == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/transfers/tasks") == ["2.json"], "no temporary file is left")
    }

    @Test("a record that cannot be read is set aside and said; a write a crash interrupted is dropped; the rest load")
    func damaged() throws {
        let directory = try makeTemporaryDirectory("voipd-store")
        defer { removeTree(directory) }
        let store = try TransferStore(directory: directory)
        try store.save(task(3))
        try "{\"id\": 4, \"trunc".write(toFile: directory + "/tasks/4.json", atomically: false, encoding: .utf8)
        try "half a write".write(toFile: directory + "/tasks/5.json.tmp", atomically: false, encoding: .utf8)
        try "not json".write(toFile: directory + "/state.json", atomically: false, encoding: .utf8)
        let contents = try store.load()
        #expect(contents.tasks.map(\.id) == [TransferTaskID(3)])
        #expect(contents.state == nil)
        #expect(contents.problems.count == 2)
        #expect(contents.problems.allSatisfy { $0.contains(".corrupt") })
        #expect(fileExists(directory + "/tasks/4.json.corrupt") && !fileExists(directory + "/tasks/4.json"))
        #expect(fileExists(directory + "/state.json.corrupt"))
        #expect(!fileExists(directory + "/tasks/5.json.tmp"))
    }

    @Test("a store path that is not a directory is refused")
    func notDirectory() throws {
        let directory = try makeTemporaryDirectory("voipd-store")
        defer { removeTree(directory) }
        try "x".write(toFile: directory + "/file", atomically: false, encoding: .utf8)
        #expect(throws: (any Error).self) { try TransferStore(directory: directory + "/file") }
    }
}
