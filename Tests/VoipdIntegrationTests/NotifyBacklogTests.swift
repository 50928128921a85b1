import Glibc
import Testing
import VoipClient
import VoipdSystem

/// sd_notify to a service manager that is busy: its socket's queue is full, so a
/// non-blocking send fails with EAGAIN. voipd must lose nothing there: a READY=1 dropped
/// leaves a `Type=notify` start waiting until its timeout (systemd then kills the service).
@Suite("sd_notify to a busy service manager")
final class NotifyBacklogTests {
    /// Each test's own rig (Swift Testing makes a new suite instance for every test): a test
    /// here uses it rather than making another.
    let rig: ServiceRig

    init() throws { rig = try ServiceRig() }

    deinit { rig.stop() }

    /// Fills the receive queue of the datagram socket at `path` (as a service manager that
    /// does not read lets it fill): `FILLER=1` datagrams from as many senders as it takes,
    /// since one sender's own send buffer may run out first. Returns the senders (kept open
    /// until the test is done) and how many datagrams went.
    static func fill(_ path: String) throws -> (senders: [DescriptorBox], sent: Int) {
        var senders: [DescriptorBox] = []
        var sent = 0
        let deadline = Deadline(.seconds(20))
        while !deadline.hasPassed {
            let sender = DescriptorBox(try connectDatagram(to: path))
            var first = true
            while case .processed = try Socket.send(sender.descriptor, bytes: Array("FILLER=1".utf8)) {
                sent += 1
                first = false
            }
            senders.append(sender)
            // A fresh sender refused at once: the receiver's queue itself is full.
            if first { return (senders, sent) }
        }
        throw TimedOut(description: "the notify socket's queue did not fill (\(sent) datagrams)")
    }

    @Test("READY=1 refused by a full notify queue (EAGAIN) is held back and sent, in order, once the service manager reads; nothing is lost")
    func readyAfterFullQueue() throws {
        let filled = try Self.fill(rig.manager.path)
        defer { withExtendedLifetime(filled.senders) {} }
        let voipd = try rig.start(passing: [])
        // Serving: it has tried READY=1 (just before its loop's first turn), and been refused.
        try waitForText("voipd listening on", in: rig.logPath)
        #expect(try VoipdControl(socketPath: rig.socketPath).status().isEmpty)
        #expect(rig.log.contains("sd_notify(READY=1) to \(rig.manager.path): its queue is full; held back until it has room"))
        // The service manager reads at last: the fillers, then what voipd held back.
        let ready = try rig.manager.expect("READY=1", context: rig.log)
        #expect(ready["MAINPID"] == "\(voipd.pid)")
        let fillers = rig.manager.messages.filter { $0.has("FILLER=1") }.count
        #expect(fillers == filled.sent, "READY=1 came after every datagram queued before it")
        try waitForText("the service manager reads again; every held-back message sent", in: rig.logPath)
    }

    @Test("a socket stored and released while the notify queue is full: the held-back FDSTORE=1 and voipd's copy go at once (the store never needed them); FDSTOREREMOVE=1 still goes")
    func releasedWhileBacklogged() throws {
        let peer = try TCPPeer()
        try rig.writeTestAppManifest("phone")
        _ = try rig.start(passing: [])
        try rig.manager.expect("READY=1", context: rig.log)
        let control = try VoipdControl(socketPath: rig.socketPath)
        _ = try control.launchManifest("phone")
        let app = try rig.acceptApp("phone")
        let filled = try Self.fill(rig.manager.path)
        defer { withExtendedLifetime(filled.senders) {} }
        try app.registerVoIPSocket("sip", connectedTo: peer)
        try app.send(.unregister(socket: "sip"))
        try app.expect(.unregistered(socket: "sip"))
        #expect(rig.log.contains("its queue is full; held back until it has room"))
        // The service manager reads: the removal comes, the store was never asked to keep it.
        try rig.manager.expect("FDSTOREREMOVE=1", context: rig.log) { $0.has("FDSTOREREMOVE=1") && $0["FDNAME"] == "phone/sip" }
        #expect(!rig.manager.messages.contains { $0.has("FDSTORE=1") && $0["FDNAME"] == "phone/sip" }, "\(rig.manager.messages.filter { !$0.has("FILLER=1") })")
        #expect(!rig.manager.store.contains { $0.name == "phone/sip" })
    }
}
