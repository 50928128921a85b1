import Testing
import VoipdAdoption
import VoipdVocabulary

@Suite("Adoption rules against real softphones' sockets")
struct AdoptionMatchingTests {
    private func adopted(_ rules: [String], _ sockets: [NetworkSocket]) throws -> [NetworkSocket] {
        try AdoptionPolicy(parsing: rules).apply(to: sockets).adopted.map(\.socket)
    }

    @Test("sip takes baresip's SIP sockets (UDP, TCP and TLS listeners, the registrar's connection) and nothing else, in a call too")
    func baresip() throws {
        let report = try AdoptionPolicy(parsing: ["sip"]).apply(to: Baresip.inCall)
        #expect(report.adopted.map(\.socket) == Baresip.sip)
        #expect(report.ignored.map(\.socket) == Baresip.others + [Baresip.rtp, Baresip.rtcp])
        #expect(report.warning == nil)
        #expect(report.adopted.first { $0.socket == Baresip.sipTLS }?.reasons == ["a listener on SIP port 5061"])
        #expect(report.ignored.first { $0.socket == Baresip.control }?.reasons
                == ["sip: a listener on 4444, which is not a SIP port (no UDP socket on it)"])
    }

    @Test("baresip on another port: the port it takes for UDP and TCP is its SIP port, + 1 its TLS port, accepted connections too")
    func baresipElsewhere() throws {
        let sip = [socket(.udp, "127.0.0.1:7000"), socket(.tcp, "127.0.0.1:7000"), socket(.tcp, "127.0.0.1:7001"),
                   socket(.tcp, "127.0.0.1:7000", "127.0.0.1:41000"), socket(.tcp, "127.0.0.1:7001", "127.0.0.1:41002")]
        let others = [socket(.udp, "0.0.0.0:7002"), socket(.udp, "0.0.0.0:7003"), socket(.tcp, "127.0.0.1:4444"),
                      socket(.tcp, "127.0.0.1:7004"), socket(.tcp, "127.0.0.1:50000", "127.0.0.1:8080")]
        #expect(try adopted(["sip"], sip + others) == sip)
    }

    @Test("linphonec: its one dual-stack UDP socket on 5060; on another port only with sip:port=N")
    func linphonec() throws {
        let standard = socket(.udp, "[::]:5060")
        #expect(try adopted(["sip"], [standard, socket(.udp, "[::]:7078"), socket(.udp, "[::]:7079")]) == [standard])
        let elsewhere = socket(.udp, "[::]:5062")
        let report = try AdoptionPolicy(parsing: ["sip"]).apply(to: [elsewhere])
        #expect(report.adopted.isEmpty)
        #expect(report.warning?.contains("nothing can wake this program") == true)
        #expect(try adopted(["sip:port=5062"], [elsewhere, socket(.udp, "[::]:5063")]) == [elsewhere], "not + 1 for UDP: RTCP sits there")
    }

    @Test("sip: connections to or from 5060 and 5061, UDP connected to 5060; not UDP to 5061 nor a closed TCP socket")
    func sipPorts() throws {
        let taken = [socket(.tcp, "[::ffff:10.0.0.2]:40000", "[::ffff:10.0.0.1]:5061"), socket(.tcp, "10.0.0.2:5060", "10.0.0.1:40000"),
                     socket(.udp, "10.0.0.2:40002", "10.0.0.1:5060"), socket(.tcp, "10.0.0.2:40004", "10.0.0.1:5060", state: .synSent),
                     socket(.tcp, "10.0.0.2:40006", "10.0.0.1:5060", state: .closeWait)]
        let left = [socket(.udp, "10.0.0.2:40008", "10.0.0.1:5061"), socket(.tcp, "0.0.0.0:5060", state: .close),
                    socket(.udp, "10.0.0.2:53000", "10.0.0.53:53")]
        #expect(try adopted(["sip"], taken + left) == taken)
    }

    @Test("patterns: transport, role, address networks, port ranges, the unspecified local address")
    func patterns() throws {
        let listener = socket(.tcp, "0.0.0.0:5060")
        let connection = socket(.tcp, "10.0.0.2:40000", "192.0.2.10:5061")
        let v6 = socket(.tcp, "[2001:db8::2]:40000", "[2001:db8::1]:5060")
        let bound = socket(.udp, "10.0.0.2:5062")
        let all = [listener, connection, v6, bound]
        #expect(try adopted(["tcp"], all) == [listener, connection, v6])
        #expect(try adopted(["tcp:role=listening"], all) == [listener])
        #expect(try adopted(["tcp:local=10.0.0.2:5060"], all) == [listener], "a socket on 0.0.0.0 receives on 10.0.0.2")
        #expect(try adopted(["tcp:remote=*:*"], all) == [connection, v6])
        #expect(try adopted(["tcp:remote=192.0.2.0/24:5060-5061"], all) == [connection])
        #expect(try adopted(["tcp:remote=[2001:db8::/32]:*"], all) == [v6])
        #expect(try adopted(["udp:local=*:5062"], all) == [bound])
        #expect(try adopted(["udp:role=connected"], all) == [])
        #expect(try adopted(["udp:local=*:5062", "tcp:role=listening"], all) == [listener, bound])
    }

    @Test("the report names the rule that took each socket, each rule's reason for the others, and rules that took nothing")
    func report() throws {
        let report = try AdoptionPolicy(parsing: ["tcp:remote=*:5060", "udp:local=*:9999"]).apply(to: [Baresip.registrar, Baresip.rtp])
        #expect(report.adopted.map(\.rule) == ["tcp:remote=*:5060"])
        #expect(report.ignored.first?.reasons == ["tcp:remote=*:5060: not tcp", "udp:local=*:9999: local end 0.0.0.0:11752 not *:9999"])
        #expect(report.unusedRules == ["udp:local=*:9999"])
        #expect(report.warning == "rules that matched no socket: udp:local=*:9999")
        #expect(report.lines == ["adopted tcp 127.0.0.1:56022 → 127.0.0.1:5060 connected (inode 4): tcp:remote=*:5060",
                                 "ignored udp 0.0.0.0:11752 unconnected (inode 8): tcp:remote=*:5060: not tcp; udp:local=*:9999: local end 0.0.0.0:11752 not *:9999"])
    }
}
