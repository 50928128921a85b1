import Foundation
import Testing
@testable import VoipdDaemon
import VoipdSystem

/// The state file's list of an app's held sockets (``RecoveryState/Socket``): what a voipd
/// restarted without a service manager's store keeps a stopped app suspended by. A list it
/// cannot read is unknown, never a reason to drop the app (whose process must still be
/// resumed).
@Suite("State file: an app's held sockets")
struct RecoveryStateTests {
    static func file(sockets: String?) -> Data {
        let listed = sockets.map { #", "sockets": \#($0)"# } ?? ""
        return Data("""
            {"version": 1, "bootID": "b", "writer": 7, "apps": [{"name": "phone", "foreground": false,
              "record": {"uid": 1000, "policy": {"exitsOnSuspend": false, "canLaunch": false, "relaunchOnData": true,
                         "runsInBackground": false, "speaksProtocol": true}},
              "process": {"identity": {"pid": 4242, "startTime": 99, "uid": 1000}, "leadsGroup": true, "suspension": {"signal": {}}}\(listed)}]}
            """.utf8)
    }

    @Test("listed sockets come back with their names, kinds, origins and inodes")
    func listed() throws {
        let state = try JSONDecoder().decode(RecoveryState.self, from: Self.file(sockets: """
            [{"name": "sip", "kind": "tcp", "origin": "registered", "inode": 5523187},
             {"name": "adopted-77", "kind": "udp", "origin": "adopted", "inode": 77}]
            """))
        #expect(state.skipped == 0)
        #expect(state.apps.first?.sockets == [RecoveryState.Socket(name: "sip", kind: "tcp", origin: .registered, inode: 5523187),
                                               RecoveryState.Socket(name: "adopted-77", kind: "udp", origin: .adopted, inode: 77)])
        let again = try JSONDecoder().decode(RecoveryState.self, from: JSONEncoder().encode(state))
        #expect(again.apps.first?.sockets == state.apps.first?.sockets)
    }

    @Test("no list (an older voipd's file) and a list this voipd cannot read (an origin of a newer one's) are unknown; the app and its process stay",
          arguments: [nil, #"[{"name": "sip", "kind": "tcp", "origin": "teleported", "inode": 1}]"#, #"[{"name": "sip"}]"#])
    func unknown(_ sockets: String?) throws {
        let state = try JSONDecoder().decode(RecoveryState.self, from: Self.file(sockets: sockets))
        #expect(state.skipped == 0)
        #expect(state.apps.count == 1 && state.apps.first?.process?.identity.pid == 4242)
        #expect(state.apps.first?.sockets == nil)
    }
}
