import VoipdVocabulary

/// A socket as the kernel's tables show it, from text: `tcp 127.0.0.1:40000 → 127.0.0.1:5060`.
func socket(_ transport: NetworkSocket.Transport, _ local: String, _ remote: String? = nil, state: NetworkSocket.State? = nil,
            inode: UInt64 = 0, receiveQueue: UInt32 = 0) -> NetworkSocket {
    let defaultState: NetworkSocket.State = remote != nil ? .established : (transport == .tcp ? .listen : .close)
    return NetworkSocket(transport: transport, state: state ?? defaultState, local: endpoint(local), remote: remote.map(endpoint),
                         receiveQueue: receiveQueue, inode: inode)
}

func endpoint(_ text: String) -> InetEndpoint {
    let colon = text.lastIndex(of: ":")!
    var host = text[..<colon]
    if host.first == "[" { host = host.dropFirst().dropLast() }
    return InetEndpoint(address: IPAddress(host)!, port: UInt16(text[text.index(after: colon)...])!)
}

/// What baresip 1.0 had open, registered to Kamailio over TCP (`sip_listen 10.77.0.1:5060`,
/// `ctrl_tcp_listen 127.0.0.1:4444`), read with `ss -tuanpe` — and, during a call, its RTP
/// and RTCP sockets.
enum Baresip {
    static let sipUDP = socket(.udp, "10.77.0.1:5060", inode: 1)
    static let sipTCP = socket(.tcp, "10.77.0.1:5060", inode: 2)
    static let sipTLS = socket(.tcp, "10.77.0.1:5061", inode: 3)
    static let registrar = socket(.tcp, "127.0.0.1:56022", "127.0.0.1:5060", inode: 4)
    static let resolver4 = socket(.udp, "0.0.0.0:57016", inode: 5)
    static let resolver6 = socket(.udp, "[::]:33538", inode: 6)
    static let control = socket(.tcp, "127.0.0.1:4444", inode: 7)
    static let rtp = socket(.udp, "0.0.0.0:11752", inode: 8)
    static let rtcp = socket(.udp, "0.0.0.0:11753", inode: 9)

    static let sip = [sipUDP, sipTCP, sipTLS, registrar]
    static let others = [resolver4, resolver6, control]
    static let inCall = sip + others + [rtp, rtcp]
}
