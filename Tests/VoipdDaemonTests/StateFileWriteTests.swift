import Foundation
import Glibc
import Testing
@testable import VoipdDaemon
import VoipdSystem
import VoipdTestSupport

/// When the state file is written: no file reads as no apps, so a voipd that found none and
/// has nothing to record writes none (and encodes nothing before READY=1); once it has
/// written one, every state is written, none of apps included, so the file never names apps
/// that are gone.
@Suite("State file: written when there is something to record or to replace")
struct StateFileWriteTests {
    @Test("no file at start and no app: nothing written; an app: written; no app again: the file is replaced")
    func nothingToRecord() throws {
        let scratch = try TemporaryDirectory("voipd-state-write-test")
        let directory = scratch.path
        let trusted = try TrustedDirectory(path: directory)
        guard let lock = try trusted.lockExclusively("voipd.lock", writing: []) else {
            Issue.record("the lock of a new directory is held")
            return
        }
        let file = StateFile(directory: trusted, name: "voipd.state", lock: lock)
        let path = directory + "/voipd.state"

        #expect(try file.load() == nil)
        try file.save(RecoveryState(bootID: "b", apps: []))
        #expect(access(path, F_OK) != 0, "no file and no app: nothing to write")
        #expect(!file.isStale)

        let withApp = try JSONDecoder().decode(RecoveryState.self, from: RecoveryStateTests.file(sockets: nil))
        try file.save(withApp)
        #expect(try file.load()?.apps.count == 1)

        try file.save(RecoveryState(bootID: "b", apps: []))
        #expect(try file.load()?.apps.isEmpty == true, "a file that named an app is replaced by one that names none")
    }
}
