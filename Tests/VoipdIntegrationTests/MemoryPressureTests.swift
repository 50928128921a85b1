import Glibc
import Testing
import VoipClient

/// Memory pressure, as jetsam did it: suspended apps first, largest first, then background
/// apps; foreground apps only at the critical level. A VoIP app's sockets stay held.
@Suite("Memory pressure", .serialized)
final class MemoryPressureTests: DaemonSuite {
    @Test("apps are terminated in the documented order")
    func order() throws {
        let peer = try harness.makePeer()
        // Three suspended apps of different sizes (one with a VoIP socket), one running in the
        // background with a task, one in the foreground.
        let sizes = ["small": 10, "large": 90, "medium": 40]
        for (name, megabytes) in sizes.sorted(by: { $0.key < $1.key }) {
            let app = try harness.launchTestApp(name)
            try app.send(.allocate(megabytes: megabytes))
            try app.expect(\.allocatedMegabytes)
            if name == "medium" {
                try app.registerVoIPSocket("sip", connectedTo: peer)
            }
            try harness.suspend(name)
        }
        let busy = try harness.launchTestApp("busy")
        try busy.send(.allocate(megabytes: 200))
        try busy.expect(\.allocatedMegabytes)
        try busy.send(.beginTask(name: "work"))
        try busy.expect(\.taskID)
        try harness.control.command(.background, "busy")
        try busy.expectEvent(.didEnterBackground)
        _ = try harness.launchTestApp("front")

        var order: [String] = []
        for _ in 0..<4 {
            let victims = try harness.control.system(.memoryPressure, count: 1)
            #expect(victims.count == 1)
            order += victims
            if let victim = victims.first {
                let ended = try harness.waitForState(victim, .terminated)
                #expect(ended.reason.hasPrefix("memoryPressure"))
            }
        }
        #expect(order == ["large", "medium", "small", "busy"])
        #expect(try harness.control.system(.memoryPressure, count: 1).isEmpty, "a foreground app is spared at the warning level")
        #expect(try harness.control.sockets("medium").map(\.name) == ["sip"], "a terminated VoIP app's sockets stay held")
        #expect(try harness.control.system(.memoryPressure, level: .critical, count: 1) == ["front"])
        try harness.waitForState("front", .terminated)
    }
}
