import SIP
import VoipdSystem
import VoipdVocabulary

/// OPTIONS to the softphone through the registrar, until its answer comes back: the
/// softphone has then read and answered a message after everything sent to it before, so
/// it is idle in its loop. Sent before every call, while the softphone is in the
/// foreground, so that both modes' calls follow the same recent SIP work.
struct ReachabilityProbe {
    let connection: CallerConnection
    let configuration: SIPCaller.Configuration

    func run() throws {
        let callID = SIPIdentifiers.callID(host: configuration.contactHost)
        let options = SIPMessage.request(.options, uri: configuration.target, headers: [
            ("Via", "SIP/2.0/TCP \(configuration.contactHost);branch=\(SIPIdentifiers.branch());rport"),
            ("Max-Forwards", "70"),
            ("From", "<sip:\(configuration.user)@\(configuration.domain)>;tag=\(SIPIdentifiers.tag())"),
            ("To", "<\(configuration.target)>"), ("Call-ID", callID), ("CSeq", "1 OPTIONS"),
        ])
        try connection.send(options.serialized())
        let deadline = MonotonicInstant.now + TimedCall.timeout
        while true {
            let message = try connection.next(before: deadline, waitingFor: "answer to an OPTIONS")
            guard message.callID == callID, let status = message.statusCode, status >= 200 else { continue }
            guard status == 200 else { throw BenchError("the softphone is not reachable: OPTIONS got \(message.summary)") }
            return
        }
    }
}
