import Foundation
import Testing
import VoipdAdoption
import VoipdVocabulary

@Suite("Adoption rule syntax")
struct AdoptionRuleSyntaxTests {
    @Test("rules read back as they are written; tls is written tcp")
    func roundTrip() throws {
        let texts = ["sip", "sip:port=5080", "sip:port=5080,port=7000", "tcp", "udp", "tcp:remote=*:5060", "udp:local=*:5062",
                     "tcp:role=listening,local=10.0.0.1:*", "tcp:remote=[2001:db8::/32]:5061", "udp:local=192.0.2.0/24:5060-5069",
                     "tcp:role=connected,local=[::1]:5060,remote=127.0.0.1:*", "udp:role=unconnected"]
        for text in texts {
            #expect(try AdoptionRule(parsing: text).description == text)
        }
        #expect(try AdoptionRule(parsing: "tls:remote=*:5061").description == "tcp:remote=*:5061")
        #expect(try AdoptionRule(parsing: "sip:port=5060").description == "sip", "5060 is in the preset already")
    }

    @Test("bad rules are refused with what is wrong", arguments: [
        ("", "empty"),
        ("http", "'http' is none of sip, tcp, udp, tls"),
        ("sip:port=0", "'0' is not a port"),
        ("sip:port=70000", "'70000' is not a port"),
        ("sip:remote=*:5060", "the sip preset takes port=N only"),
        ("tcp:remote", "'remote' is not NAME=VALUE"),
        ("tcp:", "'' is not NAME=VALUE"),
        ("tcp:remote=*", "'*' is not HOST:PORT"),
        ("tcp:remote=example.com:5060", "'example.com' is not an address"),
        ("tcp:remote=2001:db8::1:5060", "an IPv6 address goes in brackets"),
        ("tcp:remote=[10.0.0.1]:5060", "only IPv6 addresses go in brackets"),
        ("tcp:remote=[::1:5060", "opens a bracket it does not close"),
        ("tcp:remote=10.0.0.0/33:5060", "a prefix of 33 bits does not fit"),
        ("tcp:remote=10.0.0.0/:5060", "no prefix length"),
        ("tcp:remote=*:5070-5060", "is not a port, a range"),
        ("tcp:remote=*:50a", "is not a port"),
        ("tcp:role=server", "role 'server' is none of listening"),
        ("udp:role=listening", "UDP sockets do not listen"),
        ("tcp:role=listening,remote=*:5060", "a listening socket has no remote end"),
        ("tcp:local=*:1,local=*:2", "'local' is given twice"),
        ("tcp:peer=*:5060", "'peer' is none of role, local, remote"),
        ("udp:local=0.0.0.0:5060", "write * for any address"),
        ("udp:local=[::]:5060", "write * for any address"),
    ])
    func refused(text: String, problem: String) {
        do {
            let rule = try AdoptionRule(parsing: text)
            Issue.record("'\(text)' was read as \(rule)")
        } catch let error as AdoptionRuleError {
            #expect(error.rule == text)
            #expect(error.description.contains(problem), "\(error)")
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test("a manifest's rules are strings in JSON; a bad one fails the decoding with the same words")
    func codable() throws {
        let policy = try JSONDecoder().decode(AdoptionPolicy.self, from: Data(#"["sip", "udp:local=*:5062"]"#.utf8))
        #expect(policy == AdoptionPolicy(rules: [.sip(SIPPreset()), .pattern(SocketPattern(transport: .udp, local: EndpointPattern(port: .range(5062...5062))))]))
        #expect(String(decoding: try JSONEncoder().encode(policy), as: UTF8.self) == #"["sip","udp:local=*:5062"]"#)
        #expect(policy.transports == [.tcp, .udp])
        do {
            _ = try JSONDecoder().decode(AdoptionPolicy.self, from: Data(#"["tcp:remote=host:5060"]"#.utf8))
            Issue.record("decoded")
        } catch DecodingError.dataCorrupted(let context) {
            #expect(context.debugDescription.contains("'host' is not an address"))
        }
    }
}
