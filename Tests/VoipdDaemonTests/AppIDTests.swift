import Foundation
import Testing
@testable import VoipdDaemon

@Suite("AppID")
struct AppIDTests {
    @Test("an AppID encodes as the bare name, so the snapshot, the state file and a timer key read as when names were strings")
    func encodesAsBareName() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(String(decoding: try encoder.encode(AppID("phone")), as: UTF8.self) == #""phone""#)
        #expect(try JSONDecoder().decode(AppID.self, from: Data(#""phone""#.utf8)) == AppID("phone"))
        let client = ClientConnection.State(appName: "phone")
        #expect(String(decoding: try encoder.encode(client), as: UTF8.self) == #"{"appName":"phone"}"#)
        let timer = DaemonTimer.stopCheck("phone")
        #expect(String(decoding: try encoder.encode(timer), as: UTF8.self) == #"{"stopCheck":{"_0":"phone"}}"#)
        #expect(try JSONDecoder().decode(DaemonTimer.self, from: encoder.encode(timer)) == timer)
    }
}
