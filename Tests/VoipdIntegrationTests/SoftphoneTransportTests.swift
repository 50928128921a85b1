import Glibc
import SIP
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// The softphone's transports against a real Kamailio (Deploy/kamailio, in its variants):
/// over UDP, listening over TCP for a registrar that does not reuse connections, and a
/// registrar granting less than the keep-alive. Unsupervised (no voipd) where the point is
/// SIP, under voipd where it is being reachable while suspended.
/// Skipped (saying why) without Kamailio, unless CI=true, where that is a failure.
@Suite("Softphone transports with Kamailio", .serialized, .enabled(if: KamailioServer.shouldRun, Comment(rawValue: KamailioServer.skipReason)))
struct SoftphoneTransportTests {
    private static func answered(_ call: (status: Int32, output: String), _ context: @autoclosure () -> String) {
        #expect(call.status == 0 && call.output.contains("received 180 Ringing"), "\(call.output)\n\(context())")
    }

    @Test("unsupervised over UDP: it registers from a UDP socket connected to Kamailio and answers a UDP and a TCP caller over it")
    func unsupervisedOverUDP() throws {
        let kamailio = try KamailioServer(options: ["--udp"])
        defer { kamailio.stop() }
        let phone = try UnsupervisedSoftphone(registrarPort: kamailio.port, ["--transport", "udp", "--answer-after", "0.1"])
        defer { phone.stop() }
        #expect(tcpSockets(of: phone.pid).isEmpty, "no TCP at all")
        let udp = udpSockets(of: phone.pid)
        #expect(udp.count == 1 && udp.first?.remotePort == kamailio.port && udp.first?.state == 0x01, "one UDP socket, connected to Kamailio: \(udp)")
        #expect(phone.log.contains("contact <sip:alice@127.0.0.1:\(udp.first?.localPort ?? 0);transport=udp>"))
        for transport in ["udp", "tcp"] {
            Self.answered(try phone.call(["--transport", transport, "--hold", "0.2"]), "\(phone.log)\n\(kamailio.log)")
        }
        let invites = phone.lines(containing: "sip: received INVITE")
        #expect(invites.count == 2 && invites.allSatisfy { $0.hasSuffix("on udp 127.0.0.1:\(kamailio.port)") }, "\(invites)")
        #expect(phone.lines(containing: "sip: received BYE").count == 2)
    }

    @Test("unsupervised over TCP, Kamailio without connection reuse: it opens a new connection to the phone's listening port, which brings the INVITE")
    func unsupervisedListening() throws {
        let kamailio = try KamailioServer(options: ["--no-connection-reuse"])
        defer { kamailio.stop() }
        let phone = try UnsupervisedSoftphone(registrarPort: kamailio.port, ["--listen", "127.0.0.1:0", "--answer-after", "0.1"])
        defer { phone.stop() }
        let listening = tcpSockets(of: phone.pid).filter(\.isListening)
        #expect(listening.count == 1)
        let port = listening.first?.localPort ?? 0
        #expect(phone.log.contains("contact <sip:alice@127.0.0.1:\(port);transport=tcp>"))
        Self.answered(try phone.call(["--hold", "0.2"]), "\(phone.log)\n\(kamailio.log)")
        #expect(phone.log.contains("sip: accepted connection 2 from 127.0.0.1:"))
        let invites = phone.lines(containing: "sip: received INVITE")
        #expect(invites.count == 1 && invites.first?.hasSuffix("on connection 2") == true,
                "the INVITE came on the connection Kamailio opened, not on the REGISTER's (1): \(invites)")
        #expect(invites.first?.contains("INVITE sip:alice@127.0.0.1:\(port);transport=tcp") == true)
        // Kamailio without reuse may open further connections (for the ACK or the BYE), so
        // look for the one that brought the INVITE by its remote port, not for a count.
        let accepted = phone.lines(containing: "sip: accepted connection 2 from 127.0.0.1:").first
        let marker = "accepted connection 2 from 127.0.0.1:"
        let invitePeer = accepted.flatMap { line in
            line.range(of: marker).flatMap { UInt16(line[$0.upperBound...].prefix { $0.isNumber }) }
        }
        #expect(invitePeer != nil, "\(phone.log)")
        #expect(tcpSockets(of: phone.pid).contains { $0.localPort == port && !$0.isListening && $0.remotePort == invitePeer },
                "the connection that brought the INVITE is still open: \(tcpSockets(of: phone.pid))")
    }

    @Test("the control: a phone that does not listen cannot be reached through Kamailio without connection reuse")
    func notListeningIsUnreachableWithoutReuse() throws {
        let kamailio = try KamailioServer(options: ["--no-connection-reuse"])
        defer { kamailio.stop() }
        let phone = try UnsupervisedSoftphone(registrarPort: kamailio.port, ["--answer-after", "0.1"])
        defer { phone.stop() }
        let call = try phone.call(["--hold", "0.2", "--timeout", "5"])
        #expect(call.status == 1, "\(call.output)")
        #expect(phone.lines(containing: "sip: received INVITE").isEmpty)
    }

    @Test("unsupervised, stopped and continued at random instants while calls come over TCP: every message it has read is handled to the end, every call answered")
    func stoppedAndContinuedMidMessage() throws {
        let kamailio = try KamailioServer()
        defer { kamailio.stop() }
        let phone = try UnsupervisedSoftphone(registrarPort: kamailio.port, ["--answer-after", "0.05"])
        defer { phone.stop() }
        var generator = SystemRandomNumberGenerator()
        for round in 1...8 {
            let output = try openFile(phone.directory + "/call-\(round).log", flags: O_WRONLY | O_CREAT | O_TRUNC)
            let call = try TestProcess(
                [Binaries.path("softphone"), "call", "sip:alice@127.0.0.1:\(kamailio.port)", "--from", "bob", "--hold", "0.1", "--timeout", "20"],
                output: output.rawValue)
            defer { call.stop() }
            // Stop the phone for up to 20 ms, let it run up to 5 ms, until the call is over:
            // the waits are for the call's end, with a random deadline.
            var ended = false
            while !ended {
                try phone.process.pidfd.send(SIGSTOP)
                ended = waitReadable(call.pidfd.descriptor.rawValue, Deadline(.milliseconds(Int64.random(in: 0...20, using: &generator))))
                try phone.process.pidfd.send(SIGCONT)
                if !ended {
                    ended = waitReadable(call.pidfd.descriptor.rawValue, Deadline(.microseconds(Int64.random(in: 0...5000, using: &generator))))
                }
            }
            let status = try call.waitForExit(.seconds(5))
            let text = ProcFS.read(phone.directory + "/call-\(round).log") ?? ""
            #expect(status == .exited(0) && text.contains("received 180 Ringing"), "round \(round): \(text)\n\(phone.log)")
        }
        #expect(phone.lines(containing: "sip: in call").count == 8)
    }

    @Test("under voipd over UDP: its connected UDP socket is its VoIP socket; suspended, the INVITE datagram wakes it, it answers, and it is suspended again")
    func suspendedOverUDP() throws {
        let kamailio = try KamailioServer(options: ["--udp"])
        let rig = try SoftphoneRig(kamailio: kamailio)
        defer { rig.stop() }
        try rig.launch(["--transport", "udp", "--answer-after", "0.1"])
        let held = try rig.harness.control.sockets(rig.name)
        #expect(held.map(\.name) == ["sip"] && held.first?.kind.hasPrefix("udp") == true, "\(held)")
        try rig.suspend()
        Self.answered(try rig.call(["--transport", "udp", "--hold", "0.2"]), "\(rig.log)\n\(kamailio.log)")
        #expect(rig.log.contains("sip: received INVITE sip:alice@127.0.0.1:"))
        let resumed = try rig.waitForState(.background)
        #expect(resumed.from == .suspended && resumed.reason.contains("sip"))
        try rig.waitForState(.suspended)
        #expect(processState(rig.pid) == "T")
    }

    @Test("under voipd over UDP, killed while suspended: the INVITE datagram relaunches it; it keeps the UDP socket voipd hands back, reads the INVITE there and answers, without registering again")
    func relaunchedOverUDP() throws {
        let kamailio = try KamailioServer(options: ["--udp"])
        let rig = try SoftphoneRig(kamailio: kamailio)
        defer { rig.stop() }
        try rig.launch(["--transport", "udp", "--answer-after", "0.1"])
        let socket = try #require(udpSockets(of: rig.pid).first)
        try rig.suspend()
        kill(rig.pid, SIGKILL)
        try rig.waitForState(.terminated)
        Self.answered(try rig.call(["--transport", "udp", "--hold", "0.2"]), "\(rig.log)\n\(kamailio.log)")
        let status = try rig.harness.status(rig.name)
        #expect(status.launches == 2)
        let pid = try #require(status.pid)
        #expect(rig.log.contains("sip: kept the UDP socket voipd handed back (UDP 127.0.0.1:\(socket.localPort), connected to 127.0.0.1:\(kamailio.port))"), "\(rig.log)")
        #expect(udpSockets(of: pid).map(\.localPort) == [socket.localPort], "the same socket, no other")
        #expect(rig.lines(containing: "sip: registering").count == 1, "the binding outlives the process: no new REGISTER")
        #expect(rig.lines(containing: "sip: received INVITE").count >= 1)
        try rig.waitForState(.suspended)
    }

    @Test("launched again with other options, it releases what voipd held for the earlier run and it no longer uses: over TCP, the UDP socket")
    func unusedHandedBackSocketIsReleased() throws {
        let kamailio = try KamailioServer(options: ["--udp"])
        let rig = try SoftphoneRig(kamailio: kamailio)
        defer { rig.stop() }
        try rig.launch(["--transport", "udp"])
        try rig.suspend()
        kill(rig.pid, SIGKILL)
        try rig.waitForState(.terminated)
        #expect(try rig.harness.control.sockets(rig.name).map(\.name) == ["sip"], "voipd holds the UDP socket for the next run")
        try rig.launch(["--transport", "tcp"])
        #expect(rig.log.contains("voipd handed back a socket named sip that this run does not use; closed and released"), "\(rig.log)")
        let held = try rig.harness.control.sockets(rig.name)
        #expect(held.map(\.name) == ["sip"] && held.first?.kind.hasPrefix("tcp") == true, "the new run's connection, not the old UDP socket: \(held)")
        #expect(udpSockets(of: rig.pid).isEmpty)
    }

    @Test("under voipd over TCP with --listen, Kamailio without connection reuse: voipd holds the listening socket; suspended, Kamailio's new connection wakes it, it accepts it, hands it to voipd, reads the INVITE there and answers, and is suspended again")
    func suspendedListeningOverTCP() throws {
        let kamailio = try KamailioServer(options: ["--no-connection-reuse"])
        let rig = try SoftphoneRig(kamailio: kamailio)
        defer { rig.stop() }
        try rig.launch(["--listen", "127.0.0.1:0", "--answer-after", "0.1"])
        #expect(try rig.harness.control.sockets(rig.name).map(\.name).sorted() == ["sip", "sip-listener"])
        #expect(!rig.log.contains("WARNING: voipd refused"), "\(rig.log)")
        try rig.suspend()
        Self.answered(try rig.call(["--hold", "0.2"]), "\(rig.log)\n\(kamailio.log)")
        let invites = rig.lines(containing: "sip: received INVITE")
        #expect(invites.count == 1 && invites.first?.hasSuffix("on connection 2") == true, "on the connection Kamailio opened: \(invites)")
        #expect(rig.log.contains("handed to voipd as VoIP socket \"sip-in-1\""), "\(rig.log)")
        let woken = try #require(try rig.harness.control.events(rig.name).last { $0.from == .suspended })
        #expect(woken.to == .background && woken.reason.contains("sip-listener"), "\(woken)")
        try rig.waitForState(.suspended)
        #expect(processState(rig.pid) == "T")
    }

    @Test("under voipd over UDP with --listen: voipd holds the UDP socket that receives from anyone; suspended, the INVITE datagram wakes it and it answers")
    func suspendedOverUnconnectedUDP() throws {
        let kamailio = try KamailioServer(options: ["--udp"])
        let rig = try SoftphoneRig(kamailio: kamailio)
        defer { rig.stop() }
        try rig.launch(["--transport", "udp", "--listen", "127.0.0.1:0", "--answer-after", "0.1"])
        #expect(try rig.harness.control.sockets(rig.name).map(\.name) == ["sip"])
        #expect(udpSockets(of: rig.pid).first?.state == 0x07, "unconnected: \(udpSockets(of: rig.pid))")
        try rig.suspend()
        Self.answered(try rig.call(["--transport", "udp", "--hold", "0.2"]), "\(rig.log)\n\(kamailio.log)")
        let woken = try #require(try rig.harness.control.events(rig.name).last { $0.from == .suspended })
        #expect(woken.to == .background && woken.reason.contains("sip"), "\(woken)")
        try rig.waitForState(.suspended)
    }

    @Test("under voipd, a socket voipd refuses (here: past a socket quota of 1) is logged and reported, and the phone works on")
    func refusedSocketIsReported() throws {
        let kamailio = try KamailioServer()
        let rig = try SoftphoneRig(kamailio: kamailio, daemonArguments: ["--socket-quota", "1"])
        defer { rig.stop() }
        // The listener is opened (and held) first; the registrar connection is one too many.
        try rig.launch(["--listen", "127.0.0.1:0", "--answer-after", "0.1"])
        #expect(rig.log.contains("WARNING: voipd refused the VoIP socket \"sip\""), "\(rig.log)")
        let status = try #require(rig.log.split(separator: "\n").last { $0.contains(" status: ") })
        #expect(status.contains("\"name\":\"sip\"") && status.contains("\"refusal\":"), "\(status)")
        #expect(try rig.harness.control.sockets(rig.name).map(\.name) == ["sip-listener"])
        Self.answered(try rig.call(["--hold", "0.2"]), "\(rig.log)\n\(kamailio.log)")
    }

    @Test("Kamailio grants 6 s against a keep-alive of 600 s, the softphone's manifest lowers its keep-alive minimum to 2 s: voipd tells the softphone so, it lowers its keep-alive, says so, and stays reachable while suspended (calls at random times over half a minute, some gaps longer than the grant, all ring)")
    func shortGrantNeverLapses() async throws {
        let kamailio = try KamailioServer(options: ["--max-expires", "6"])
        // The floor lowered too: the default (60 s) is what a manifest may go down to in use.
        let rig = try SoftphoneRig(kamailio: kamailio, daemonArguments: ["--timing", "keepAliveFloor=1"],
                                   manifest: ["keepAliveMinimum": 2])
        defer { rig.stop() }
        try rig.launch(["--answer-after", "0.1", "--keep-alive", "600"])
        #expect(rig.log.contains("keep-alive minimum 2 s"), "voipd told the softphone its minimum at hello:\n\(rig.log)")
        // The status line follows the log line that says the keep-alive was lowered.
        try rig.waitForLog(#""keepAliveLowered":true,"keepAliveSeconds":2,"lapseSeconds":0"#)
        #expect(rig.log.contains("keep-alive lowered to 2 s"))
        #expect(rig.log.contains("registering sip:alice@127.0.0.1:\(kamailio.port) for 3600 s"), "it asks for more than the keep-alive needs")
        let status = try rig.harness.status(rig.name)
        #expect(status.keepAliveSeconds == 2 && status.keepAliveMinimumSeconds == 2, "voipd has the lowered keep-alive: \(status)")
        #expect(status.reachableForSeconds == 2 && status.keepAliveWarning == nil, "and the grant is covered: \(status)")
        try rig.suspend()
        let start = ContinuousClock.now
        // The calls' schedule, random on purpose (it is the clock that lets a registration
        // lapse, so the test waits on the clock): gaps shuffled, with jitter so that calls
        // land at every phase of the keep-alive, three of them longer than the grant, after
        // which a phone whose registration lapsed gets no INVITE (Kamailio answers 404).
        var generator = SystemRandomNumberGenerator()
        let gaps = [0.5, 1.5, 3, 4.5, 6.5, 7.5, 8.5].map { $0 + Double.random(in: -0.4...0.4, using: &generator) }.shuffled(using: &generator)
        for (index, gap) in gaps.enumerated() {
            try await Task.sleep(for: .seconds(gap))
            Self.answered(try rig.call(["--hold", "0.1"]), "call \(index + 1) after \(gap) s\n\(rig.log)\n\(kamailio.log)")
        }
        let elapsed = Int((ContinuousClock.now - start).components.seconds)
        let registrations = rig.log.components(separatedBy: "sip: registered for 6 s").count - 1
        #expect(registrations >= elapsed / 6 + 1, "\(registrations) registrations in \(elapsed) s")
        #expect(!rig.log.contains("registration failed"))
        #expect(rig.lines(containing: "sip: received INVITE").count == gaps.count)
        try rig.waitForState(.suspended)
    }

    @Test("when even the shortest keep-alive voipd permits cannot cover the grant, the softphone says so loudly, with how long it may lapse, so do voipd's log and voipctl status, and indeed a call after the grant ran out does not reach it")
    func uncoverableGrantIsReported() async throws {
        let kamailio = try KamailioServer(options: ["--max-expires", "6"])
        let rig = try SoftphoneRig(kamailio: kamailio)
        defer { rig.stop() }
        try rig.launch(["--answer-after", "0.1"])
        try rig.waitForLog("registration: WARNING: the registrar grants 6 s, but the shortest keep-alive voipd permits this app is 600 s")
        try rig.waitForLog(#""keepAliveSeconds":600,"lapseSeconds":598"#)
        #expect(try rig.harness.status(rig.name).keepAliveSeconds == 600)
        // voipd heard with the keep-alive that the grant keeps the phone reachable for 2 s.
        let warning = "phone: it stays reachable for 2 s without a wake, but the shortest keep-alive it may have is 600 s, and no manifest may go below keepAliveFloor (60 s): while suspended it may be unreachable (a registration lapsed) for up to 598 s before each keep-alive"
        try waitForText(warning, in: rig.harness.logPath)
        let status = try rig.harness.status(rig.name)
        #expect(status.reachableForSeconds == 2 && status.keepAliveMinimumSeconds == 600)
        #expect(status.keepAliveWarning.map { "phone: " + $0 }?.hasPrefix(warning) == true, "\(String(describing: status.keepAliveWarning))")
        let table = try runCommand([Binaries.voipctl, "--socket", rig.harness.socketPath, "status", rig.name])
        #expect(table.status == 0 && table.output.contains("phone: WARNING: it stays reachable for 2 s without a wake"), "\(table.output)")
        try rig.suspend()
        // What the warning says: the last REGISTER went before the suspension, and Kamailio
        // (whose clock counts whole seconds) forgets the binding at most 7 s later.
        try await Task.sleep(for: .seconds(8))
        let call = try rig.call(["--hold", "0.1", "--timeout", "5"])
        #expect(call.status == 1 && call.output.contains("404"), "\(call.output)")
        #expect(rig.lines(containing: "sip: received INVITE").isEmpty)
        #expect(processState(rig.pid) == "T", "nothing woke it")
    }
}
