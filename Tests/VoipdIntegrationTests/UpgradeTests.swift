import Glibc
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// In-place upgrade (voipctl upgrade, SIGUSR2): voipd re-executes itself keeping every app,
/// connection and held socket.
@Suite("In-place upgrade", .serialized)
struct UpgradeTests {
    @Test("an app suspended throughout stays suspended; connections stay; a wake still works; nothing leaks")
    func upgradeKeepsEverything() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let (app, remote) = try harness.launchAppWithVoIPSocket("phone")
        try harness.suspend(app)
        let descriptorsBefore = openDescriptorCount(harness.daemon.pid)
        #expect(processState(app.pid) == "T")

        let result = try harness.control.upgrade()
        #expect(result.pid == harness.daemon.pid, "the same process, a new program")
        #expect(result.apps == 1)
        #expect(result.heldSockets == 1)
        #expect(processState(app.pid) == "T", "suspended throughout")
        #expect(try harness.status("phone").state == .suspended)
        #expect(try harness.status("phone").connected, "the app's connection is the same")
        #expect(openDescriptorCount(harness.daemon.pid) == descriptorsBefore, "no descriptor gained or lost")

        // A wake through the new program; the event stream the harness follows is the old connection.
        try remote.write("INVITE after the upgrade")
        let wake = try app.expectEvent(.voipSocketReadable)
        #expect(wake.socket?.name == "sip")
        #expect(try app.expectRead("sip") == .data("INVITE after the upgrade"))
        try harness.waitForState("phone", .suspended)
        #expect(try harness.control.events("phone").count >= 6, "the history came along")
    }

    @Test("a held TCP listener and an unconnected UDP socket come along: after the upgrade a connection, then a datagram, wakes the suspended app")
    func upgradeKeepsListenersAndDatagramSockets() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let (app, listenerPort, datagramPort) = try Self.appServing(harness)
        try harness.suspend(app)

        let result = try harness.control.upgrade()
        #expect(result.heldSockets == 2)
        let held = try harness.control.sockets("phone")
        #expect(held.map(\.name) == ["datagrams", "listener"] && held.map(\.role) == ["unconnected", "listening"], "\(held)")
        #expect(processState(app.pid) == "T", "suspended throughout")

        let connection = try Socket.connectTCP(host: "127.0.0.1", port: listenerPort)
        try connection.writeAll(Array("INVITE over the new connection".utf8))
        let woken = try app.expectEvent(.voipSocketReadable)
        #expect(woken.socket?.name == "listener" && woken.socket?.connectionsWaiting == 1, "\(woken)")
        #expect(try app.expectRead("listener-in-1") == .data("INVITE over the new connection"))
        try harness.waitForState("phone", .suspended)

        let sender = try Socket.bindUDP()
        try Socket.connectDatagram(sender, host: "127.0.0.1", port: datagramPort)
        try sender.writeAll(Array("INVITE by datagram".utf8))
        // (The accepted connection may have woken the app once more first, had its data come late.)
        let second = try app.expect(where: { $0.event?.kind == .voipSocketReadable && $0.event?.socket?.name == "datagrams" })
        #expect(second.event?.socket?.connectionsWaiting == nil, "\(second)")
        #expect(try app.expectRead("datagrams") == .data("INVITE by datagram"))
        try harness.waitForState("phone", .suspended)
    }

    /// The test app "phone" with two VoIP sockets that serve anyone: a TCP listener named
    /// `listener` and an unconnected UDP socket named `datagrams`, and their ports.
    static func appServing(_ harness: DaemonHarness) throws -> (app: TestAppHandle, listenerPort: UInt16, datagramPort: UInt16) {
        let app = try harness.launchTestApp("phone")
        try app.send(.registerServing(socket: "listener", transport: "tcp"))
        let listenerPort = try app.expect(\.listeningPort)
        try app.send(.registerServing(socket: "datagrams", transport: "udp"))
        return (app, listenerPort, try app.expect(\.listeningPort))
    }

    @Test("SIGUSR2 upgrades too; the daemon keeps serving")
    func upgradeBySignal() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let app = try harness.launchTestApp("phone")
        try harness.suspend("phone")
        try harness.daemon.pidfd.send(SIGUSR2)
        // The follower's connection is carried over: the next transitions still arrive on it.
        try harness.control.command(.foreground, "phone")
        try app.expectEvent(.didBecomeActive)
        try harness.waitForState("phone", .active)
        #expect(harness.log.contains("upgraded in place"))
    }

    /// The connections are in the loop's own set, out of which they are taken for the exec
    /// (the set carried over holds the held sockets alone): an exec that fails puts them back.
    @Test("an exec that fails (the program file removed) leaves every connection served: the one that asked, the follower's, an app's")
    func failedExecKeepsConnections() throws {
        let copies = try TemporaryDirectory("voipd-test")
        let program = copies.path + "/voipd"
        #expect(try runCommand(["/bin/cp", Binaries.voipd, program]).status == 0)
        let harness = try DaemonHarness(binary: program)
        defer { harness.stop() }
        let app = try harness.launchTestApp("phone")
        #expect(unlink(program) == 0)

        #expect(throws: VoipdError.self) { try harness.control.upgrade() }
        #expect(harness.log.contains("upgrade failed, still running the old program"))
        // The requester's connection, another request on it.
        #expect(try harness.status("phone").connected)
        // The follower's: the next transitions still arrive on it.
        try harness.suspend("phone")
        try harness.control.command(.foreground, "phone")
        try app.expectEvent(.didBecomeActive)
        try harness.waitForState("phone", .active)
    }

    /// The old program's state in a format this voipd does not read: the first (which had no
    /// number), or one from the future. It names one app process, stopped.
    @Test("a state in another format is refused: voipd says why and resumes the apps the old program left stopped",
          arguments: ["", #""format": 1000, "#])
    func otherFormatRefused(format: String) throws {
        let directory = try makeTemporaryDirectory("voipd-upgrade")
        defer { removeTree(directory) }
        defer { removeLegacyFreezerDirectory(socketPath: directory + "/voipd.sock") }
        let app = try TestProcess(["/bin/sleep", "600"])
        defer { app.stop() }
        try app.pidfd.send(SIGSTOP)
        var info = siginfo_t()
        _ = waitid(P_PID, id_t(app.pid), &info, WSTOPPED | WEXITED | WNOWAIT)
        #expect(processState(app.pid) == "T")
        let pidfd = try PidFd(pid: app.pid)
        let statePath = directory + "/state.json"
        let state = #"{\#(format)"listener": 5, "apps": [{"name": "phone", "process": {"pid": \#(app.pid), "pidfd": 4, "isChild": false}}]}"#
        try openFile(statePath, flags: O_WRONLY | O_CREAT).writeAll(Array(state.utf8))
        let stateFile = try openFile(statePath, flags: O_RDONLY)
        let log = try openFile(directory + "/voipd.log", flags: O_WRONLY | O_CREAT)
        let daemon = try TestProcess([Binaries.voipd, "--socket", directory + "/voipd.sock", "--no-memory-pressure-trigger", "--upgrade-from", "3"]
                                         + Binaries.ownConfiguration(in: directory),
                                     output: log.rawValue, extraDescriptors: [stateFile.rawValue, pidfd.descriptor.rawValue])
        #expect(try daemon.waitForExit(.seconds(20)) == .exited(1))
        let message = ProcFS.read(directory + "/voipd.log") ?? ""
        #expect(message.contains("format \(format.isEmpty ? 1 : 1000)") && message.contains("upgrade refused"), "\(message)")
        #expect(processState(app.pid) != "T", "the app is running again")
    }
}
