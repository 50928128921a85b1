import VoipdVocabulary

/// The `sip` preset: a program's SIP sockets, told apart from its media, resolver and
/// control sockets by ports, as softphones actually open them.
///
/// What baresip 1.0 opens (measured): UDP and a TCP listener on its SIP port, a TLS listener
/// on the SIP port + 1, a TCP connection to the registrar, and besides them a UDP resolver
/// socket per family bound to an ephemeral port on the unspecified address, its `ctrl_tcp`
/// listener (TCP only), and during a call a UDP pair for RTP and RTCP (UDP only). linphonec
/// (liblinphone 5.1) opens one dual-stack UDP socket on its SIP port (5060 unless
/// configured), and the RTP/RTCP pair during calls.
///
/// A socket is SIP when it is:
/// - a TCP connection to or from a SIP port (5060, 5061 for TLS, and the ports added with
///   `sip:port=N`, each with N + 1 for TLS): the registrar's connection, and connections
///   accepted on a SIP listener;
/// - a UDP socket bound to a SIP port (not N + 1: RTCP often sits on an RTP port + 1), or
///   connected to one (a client that connects its UDP socket to its registrar);
/// - a TCP listener on a SIP port;
/// - on a port the program binds both for UDP and for a TCP listener: RFC 3261 (§18) has a
///   SIP element take UDP and TCP on the same port, and nothing else in a softphone does
///   (RTP and resolvers are UDP only, control ports TCP only). Such a port, and + 1 for a
///   TLS listener beside it, become SIP ports of this program.
///
/// Not SIP: RTP and RTCP, resolver sockets, control listeners, anything UDP-only on a port
/// that is not a SIP port. A UDP-only SIP socket on a port of the program's choosing
/// (linphonec with `sip_port` set to another port) cannot be told from media by its ports:
/// name it with `sip:port=N`.
public struct SIPPreset: Hashable, Sendable {
    /// Ports added to 5060 with `sip:port=N`.
    public var extraPorts: [UInt16]

    public init(extraPorts: [UInt16] = []) { self.extraPorts = extraPorts }

    /// 5060 and the added ports.
    public var sipPorts: Set<UInt16> { Set([5060] + extraPorts) }

    /// The SIP ports and, for each, the port above it (TLS).
    public var allPorts: Set<UInt16> { sipPorts.union(sipPorts.compactMap { $0 == .max ? nil : $0 + 1 }) }

    /// The ports this program uses for SIP besides the preset's: those it binds both for UDP
    /// and a TCP listener.
    public func programSIPPorts(_ sockets: [NetworkSocket]) -> Set<UInt16> {
        let udp = Set(sockets.filter { $0.transport == .udp }.map(\.local.port))
        let listening = Set(sockets.filter { $0.role == .listening }.map(\.local.port))
        return udp.intersection(listening).subtracting([0])
    }

    public func verdict(for socket: NetworkSocket, programSIPPorts: Set<UInt16>) -> RuleVerdict {
        let sip = sipPorts, all = allPorts
        let own = programSIPPorts
        let ownTLS = Set(own.compactMap { $0 == .max ? nil : $0 + 1 })
        let port = socket.local.port
        switch (socket.transport, socket.role) {
        case (.tcp, .connected):
            if let remote = socket.remote, all.contains(remote.port) { return .matched("a connection to SIP port \(remote.port)") }
            if all.contains(port) { return .matched("a connection accepted on SIP port \(port)") }
            if own.contains(port) || ownTLS.contains(port) { return .matched("a connection accepted on this program's SIP port \(port)") }
            return .notMatched("a connection between ports that are not SIP ports")
        case (.tcp, .listening):
            if all.contains(port) { return .matched("a listener on SIP port \(port)") }
            if own.contains(port) { return .matched("a listener on this program's SIP port \(port) (UDP and TCP)") }
            if ownTLS.contains(port) { return .matched("a TLS listener on \(port), beside this program's SIP port \(port - 1)") }
            return .notMatched("a listener on \(port), which is not a SIP port (no UDP socket on it)")
        case (.tcp, .unconnected):
            return .notMatched("a TCP socket neither listening nor connected")
        case (.udp, _):
            if sip.contains(port) { return .matched("UDP bound to SIP port \(port)") }
            if own.contains(port) { return .matched("UDP on this program's SIP port \(port) (UDP and TCP)") }
            if let remote = socket.remote, sip.contains(remote.port) { return .matched("UDP connected to SIP port \(remote.port)") }
            return .notMatched("UDP on \(port), which is not a SIP port")
        }
    }
}
