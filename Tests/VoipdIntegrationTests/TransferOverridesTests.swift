import Foundation
import Glibc
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// What `voipctl power` and `voipctl network` set is the user's word on the device's power
/// and network: voipd keeps it beside its transfer store, so an in-place upgrade and a
/// restart keep it (the tasks it holds back are kept too); `auto` gives the system's back,
/// and a reboot drops it (docs/CONFIGURATION.md).
@Suite("voipctl power and network across upgrades and restarts", .serialized)
struct TransferOverridesTests {
    /// The conditions as voipd has them now, asked without changing any: `auto` for the
    /// network's availability, which no test here sets.
    static func conditions(_ control: VoipdControl) throws -> TransferConditionsResult {
        try control.setNetwork(NetworkSetting(auto: [.available]))
    }

    @Test("voipctl power and voipctl network settings stay over the system's across an in-place upgrade and a restart, until auto")
    func settingsSurviveUpgradeAndRestart() throws {
        let rig = try ServiceRig()
        defer { rig.stop() }
        let first = try RestartRecoveryTests.start(rig)
        let control = try VoipdControl(socketPath: rig.socketPath)
        try control.setPower(.battery)
        try control.setNetwork(NetworkSetting(expensive: true, kind: "cellular"))

        #expect(try control.upgrade().pid == first.pid)
        try rig.manager.expect("READY=1", context: rig.log)
        var seen = try Self.conditions(control)
        #expect(seen.power == .battery && seen.powerOverridden, "after the upgrade: \(seen)\n\(rig.log)")
        #expect(seen.expensive && seen.networkKind == "cellular" && Set(seen.networkOverridden) == [.expensive, .kind], "after the upgrade: \(seen)")

        #expect(try rig.terminate(first) == .exited(0))
        let second = try RestartRecoveryTests.start(rig)
        let again = try VoipdControl(socketPath: rig.socketPath)
        seen = try Self.conditions(again)
        #expect(seen.power == .battery && seen.powerOverridden, "after the restart: \(seen)\n\(rig.log)")
        #expect(seen.expensive && seen.networkKind == "cellular" && Set(seen.networkOverridden) == [.expensive, .kind], "after the restart: \(seen)")
        #expect(rig.log.contains("transfers: kept from before voipd started: power battery; network's expensive, kind"), "\(rig.log)")

        // auto, and the next voipd follows the system as well.
        try again.setPower(.auto)
        try again.setNetwork(NetworkSetting(auto: [.expensive, .kind]))
        #expect(try rig.terminate(second) == .exited(0))
        _ = try RestartRecoveryTests.start(rig)
        seen = try Self.conditions(try VoipdControl(socketPath: rig.socketPath))
        #expect(!seen.powerOverridden && seen.networkOverridden.isEmpty, "after auto and a restart: \(seen)")
    }

    @Test("settings kept in an earlier boot are dropped: the system's power and network are followed, and the log says why")
    func earlierBootDropsSettings() throws {
        let rig = try ServiceRig()
        defer { rig.stop() }
        let store = rig.directory + "/voipd.transfers"
        mkdir(store, 0o700)
        try #"{"bootID": "00000000-0000-0000-0000-000000000000", "power": "battery", "network": {"isExpensive": true}}"#
            .write(toFile: store + "/overrides.json", atomically: true, encoding: .utf8)
        _ = try RestartRecoveryTests.start(rig)
        let seen = try Self.conditions(try VoipdControl(socketPath: rig.socketPath))
        #expect(!seen.powerOverridden && seen.networkOverridden.isEmpty, "\(seen)\n\(rig.log)")
        #expect(rig.log.contains("were for an earlier boot"), "\(rig.log)")
    }
}
