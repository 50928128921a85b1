import Glibc
import Testing
import VoipClient
import VoipdProtocol
import VoipdSystem
import VoipdTestSupport

/// Issue 13 through voipd: a suspended test app with a VoIP socket and memory filled with a
/// known pattern is hibernated into a swap area the test sets up, woken by data on its
/// socket, answers, and reads its memory back intact.
@Suite("Hibernation through voipd", .serialized)
struct HibernationDaemonTests {
    static let invite = "INVITE sip:phone@voipd.invalid SIP/2.0\r\nContent-Length: 0\r\n\r\n"

    /// A test app with a VoIP socket and `megabytes` of patterned memory, suspended.
    private static func suspendedApp(_ harness: DaemonHarness, _ name: String, megabytes: Int)
        throws -> (app: TestAppHandle, remote: PeerConnection, checksum: UInt64) {
        // The test ends the wake itself, once the app has answered and read its memory.
        let (app, remote) = try harness.launchAppWithVoIPSocket(name, ["--no-ack", "voipSocketReadable"])
        try app.send(.fillMemory(megabytes: megabytes, seed: UInt64(megabytes) &* 7919))
        let filled = try app.expect(\.filledMemory, timeout: .seconds(120))
        try harness.suspend(app)
        return (app, remote, filled.checksum)
    }

    /// `megabytes` of swap in zram for the test, which needs root and zram (with CI=true
    /// their absence fails it).
    private static func zramSwap(megabytes: Int, sourceLocation: SourceLocation = #_sourceLocation) throws -> TemporarySwap {
        try #require(isRoot && hasZram, "swapon needs root; this kernel needs zram", sourceLocation: sourceLocation)
        return try TemporarySwap(.zram(algorithm: nil), megabytes: megabytes)
    }

    /// Data on the VoIP socket wakes the app; it reads it, answers, and its memory is as written.
    private static func wakeAndCheck(_ app: TestAppHandle, _ remote: PeerConnection, checksum: UInt64) throws {
        try remote.write(invite)
        let event = try app.expectEvent(.voipSocketReadable)
        #expect(event.socket?.name == "sip")
        #expect(try app.expectRead("sip") == .data(invite))
        try app.send(.write(socket: "sip", data: "SIP/2.0 180 Ringing"))
        #expect(try remote.read() == "SIP/2.0 180 Ringing")
        try app.send(.checksumMemory)
        #expect(try app.expect(\.memoryChecksum, timeout: .seconds(120)) == checksum, "the memory came back intact")
        try app.send(.acknowledge(eventID: event.id))
    }

    @Test("voipctl hibernate pages a suspended 10 MB app out into zram; data on its VoIP socket wakes it, it answers, its memory intact",
          .enabled(if: (isRoot && hasZram) || runningUnderCI, "needs root and zram (with CI=true their absence is a failure)"),
          .disabled(if: underSanitizer, hibernationUnderSanitizer))
    func byRequest() throws {
        let swap = try Self.zramSwap(megabytes: 256)
        defer { #expect(throws: Never.self) { try swap.remove() } }
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let (app, remote, checksum) = try Self.suspendedApp(harness, "phone", megabytes: 10)
        let before = try harness.status("phone")
        #expect(before.hibernation == nil && before.swappedBytes == 0)

        let hibernated = try harness.control.command(.hibernate, "phone")
        #expect(hibernated.state == .suspended, "hibernated is a kind of suspended")
        #expect(hibernated.hibernation?.state == .hibernated)
        #expect(hibernated.hibernation?.swap?.hasPrefix(swap.zramDevice ?? "?") == true, "\(String(describing: hibernated.hibernation))")
        let size: UInt64 = 10 << 20
        #expect((hibernated.swappedBytes ?? 0) >= size, "VmSwap: \(String(describing: hibernated.swappedBytes))")
        #expect((before.residentBytes ?? 0) >= (hibernated.residentBytes ?? .max) + size,
                "VmRSS \(String(describing: before.residentBytes)) → \(String(describing: hibernated.residentBytes))")
        #expect(processState(app.pid) == "T", "paging out does not resume it")
        let table = try ControlToolTests.voipctl(harness, "status")
        #expect(table.output.contains("hibernated"), "\(table.output)")
        #expect(harness.log.contains("phone: hibernated (hibernate requested)"), "\(harness.log)")

        try Self.wakeAndCheck(app, remote, checksum: checksum)
        #expect(try harness.status("phone").hibernation == nil, "woken, it is no longer hibernated")
        #expect(harness.log.contains("phone: woken from hibernation"))
    }

    @Test("a frozen app in its own cgroup is hibernated too: its cgroup's processes are paged out, and it thaws intact",
          .enabled(if: (isRoot && hasZram && ScratchCgroup.availableOrCI(.v2)) || runningUnderCI, "needs root, zram and a cgroup2 mount (with CI=true their absence is a failure)"),
          .disabled(if: underSanitizer, hibernationUnderSanitizer))
    func frozenInItsCgroup() throws {
        let swap = try Self.zramSwap(megabytes: 256)
        defer { #expect(throws: Never.self) { try swap.remove() } }
        let scratch = try ScratchCgroup(.v2)
        let directory = try makeTemporaryDirectory("voipd-hibernate-freezer")
        defer {
            removeTree(directory)
            #expect(scratch.tearDown() == [], "cgroups left behind")
        }
        let file = try openFile(directory + "/voipd.json", flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
        try file.writeAll(Array(#"{"suspension": "freezer", "cgroupDirectory": "\#(scratch.path)/voipd"}"#.utf8))
        let harness = try DaemonHarness(arguments: ["--config", directory + "/voipd.json"])
        defer { harness.stop() }
        let (app, remote, checksum) = try Self.suspendedApp(harness, "phone", megabytes: 10)
        #expect(try harness.status("phone").suspension == "cgroup v2 freezer")
        #expect(DaemonFreezerTests.frozen(scratch.path + "/voipd/app-phone"))

        let hibernated = try harness.control.command(.hibernate, "phone")
        #expect(hibernated.hibernation?.state == .hibernated)
        #expect((hibernated.swappedBytes ?? 0) >= 10 << 20)
        #expect(DaemonFreezerTests.frozen(scratch.path + "/voipd/app-phone"), "paging out does not thaw it")
        try Self.wakeAndCheck(app, remote, checksum: checksum)
    }

    @Test("after hibernateAfterSuspension a suspended 10 MB app is hibernated by itself, into a swap file, and wakes intact",
          .enabled(if: isRoot || runningUnderCI, "needs root (with CI=true its absence is a failure)"),
          .disabled(if: underSanitizer, hibernationUnderSanitizer))
    func byTimer() throws {
        try #require(isRoot, "swapon needs root")
        let directory = try makeTemporaryDirectory("voipd-swapfile")
        defer { removeTree(directory) }
        let swap = try TemporarySwap(.file(directory: directory), megabytes: 256)
        defer { #expect(throws: Never.self) { try swap.remove() } }
        let harness = try DaemonHarness(arguments: ["--timing", "hibernateAfterSuspension=0.5"])
        defer { harness.stop() }
        let (app, remote, checksum) = try Self.suspendedApp(harness, "phone", megabytes: 10)
        try waitForText("phone: hibernated (suspended for 0.5 s)", in: harness.logPath)
        let status = try harness.status("phone")
        #expect(status.hibernation?.state == .hibernated)
        #expect(status.hibernation?.swap == "file \(swap.path)")
        #expect((status.swappedBytes ?? 0) >= 10 << 20)
        try Self.wakeAndCheck(app, remote, checksum: checksum)
    }

    @Test("a 100 MB app is over the 16 MB limit: it stays suspended, says so, and memory pressure ends it before a hibernated one",
          .enabled(if: (isRoot && hasZram) || runningUnderCI, "needs root and zram (with CI=true their absence is a failure)"),
          .disabled(if: underSanitizer, hibernationUnderSanitizer))
    func overLimit() throws {
        let swap = try Self.zramSwap(megabytes: 512)
        defer { #expect(throws: Never.self) { try swap.remove() } }
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let small = try Self.suspendedApp(harness, "small", megabytes: 10)
        _ = try Self.suspendedApp(harness, "large", megabytes: 100)
        #expect(try harness.control.command(.hibernate, "small").hibernation?.state == .hibernated)
        let resident = try harness.status("large").residentBytes ?? 0

        #expect(throws: VoipdError.self, "refused, with the reason") { try harness.control.command(.hibernate, "large") }
        let large = try harness.status("large")
        #expect(large.state == .suspended)
        #expect(large.hibernation?.state == .overLimit)
        #expect((large.hibernation?.dirtyBytes ?? 0) >= 100 << 20)
        #expect(large.hibernation?.limitBytes == 16 << 20)
        #expect(large.swappedBytes == 0 && (large.residentBytes ?? 0) + (1 << 20) >= resident, "nothing of it was paged out")
        #expect(harness.log.contains("large: stays suspended: "), "\(harness.log)")

        #expect(try harness.control.system(.memoryPressure, count: 1) == ["large"])
        #expect(try harness.waitForState("large", .terminated).reason.hasPrefix("memoryPressure"))
        // The hibernated app was not touched: still hibernated, and intact when woken.
        #expect(try harness.status("small").hibernation?.state == .hibernated)
        try Self.wakeAndCheck(small.app, small.remote, checksum: small.checksum)
    }

    @Test("without swap, voipctl hibernate pages out only what files back, and says so; the timer does nothing",
          .enabled(if: (try? SwapSpace.current().areas.isEmpty) == true, "swap is on: the case without it cannot be shown"),
          .disabled(if: underSanitizer, hibernationUnderSanitizer))
    func withoutSwap() throws {
        // No test's swap area comes and goes meanwhile.
        let noSwap = try SwapTestLock.withoutSwap()
        defer { withExtendedLifetime(noSwap) {} }
        let harness = try DaemonHarness(arguments: ["--timing", "hibernateAfterSuspension=0.2"])
        defer { harness.stop() }
        let (app, remote, checksum) = try Self.suspendedApp(harness, "phone", megabytes: 10)
        try waitForText("no swap space: suspended apps are not hibernated", in: harness.logPath)
        #expect(try harness.status("phone").hibernation == nil, "the timer hibernated nothing")

        let result = try ControlToolTests.voipctl(harness, "hibernate", "phone")
        #expect(result.status == 0)
        #expect(result.output.contains("hibernated without swap: only file-backed pages were paged out"), "\(result.output)")
        let status = try harness.status("phone")
        #expect(status.hibernation?.state == .hibernated && status.hibernation?.swap == nil)
        #expect(status.swappedBytes == 0)
        #expect(try ControlToolTests.voipctl(harness, "status").output.contains("hibernated (no swap)"))
        #expect(harness.log.contains("phone: no swap: "), "\(harness.log)")
        try Self.wakeAndCheck(app, remote, checksum: checksum)
    }

    @Test("the softphone, suspended and hibernated into zram, is called through Kamailio: the INVITE wakes it, it rings and answers",
          .enabled(if: (isRoot && hasZram && KamailioServer.shouldRun) || runningUnderCI, "needs root, zram and Kamailio (with CI=true their absence is a failure)"),
          .disabled(if: underSanitizer, hibernationUnderSanitizer))
    func softphoneThroughKamailio() throws {
        let swap = try Self.zramSwap(megabytes: 256)
        defer { #expect(throws: Never.self) { try swap.remove() } }
        let kamailio = try KamailioServer()
        let rig = try SoftphoneRig(kamailio: kamailio)
        defer { rig.stop() }
        _ = try rig.launch(["--answer-after", "0.1"])
        try rig.suspend()
        let hibernated = try rig.harness.control.command(.hibernate, rig.name)
        #expect(hibernated.hibernation?.state == .hibernated, "\(String(describing: hibernated.hibernation))")
        #expect((hibernated.swappedBytes ?? 0) >= 1 << 20, "its own memory went to swap: \(String(describing: hibernated.swappedBytes))")
        #expect(processState(rig.pid) == "T")

        let call = try rig.call(["--hold", "0.2"])
        #expect(call.status == 0, "\(call.output)\n\(rig.log)\n\(kamailio.log)")
        #expect(call.output.contains("received 180 Ringing"))
        #expect(call.output.contains("received 200 OK (CSeq 1 INVITE)"))
        #expect(try rig.waitForState(.background).from == .suspended)
        try rig.waitForState(.suspended)
        #expect(rig.harness.log.contains("\(rig.name): woken from hibernation"))
    }

    @Test("only a suspended app is hibernated", arguments: ["active", "background"])
    func refused(_ state: String) throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let app = try harness.launchTestApp("phone")
        if state == "background" {
            try app.send(.beginTask(name: "work"))
            try app.expect(\.taskID)
            try harness.control.command(.background, "phone")
            try app.expectEvent(.didEnterBackground)
        }
        let result = try ControlToolTests.voipctl(harness, "hibernate", "phone")
        #expect(result.status == 1)
        #expect(result.output.contains("only a suspended app is hibernated"), "\(result.output)")
    }
}
