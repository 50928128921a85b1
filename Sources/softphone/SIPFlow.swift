import SIP

/// Where a SIP message came from or goes to: one of the softphone's TCP connections (by its
/// number), or, over UDP, a peer's address.
enum SIPFlow: Hashable, Sendable, CustomStringConvertible {
    case connection(Int)
    case datagram(SIPSocketAddress)

    var description: String {
        switch self {
        case .connection(let id): "connection \(id)"
        case .datagram(let address): "udp \(address)"
        }
    }
}

/// What each SIP socket is for, and the name it has among the app's VoIP sockets with voipd
/// (which hands sockets back by name after a relaunch).
enum SIPSocketRole: Hashable, Sendable, CustomStringConvertible {
    /// The TCP connection the softphone opened to the registrar, which its REGISTERs take.
    case registrarConnection
    /// The UDP socket, for everything.
    case datagrams
    /// The TCP socket listening at the Contact's address (`--listen`).
    case listener
    /// A connection the registrar (or anyone) opened to the listener, numbered.
    case accepted(Int)

    /// The VoIP socket's name: `sip`, `sip-listener`, `sip-in-N`.
    var voipSocketName: String {
        switch self {
        case .registrarConnection, .datagrams: "sip"
        case .listener: "sip-listener"
        case .accepted(let number): "sip-in-\(number)"
        }
    }

    /// The role a socket voipd handed back under `name` plays, if it is one of these.
    init?(voipSocketName name: String, isDatagram: Bool) {
        if name == "sip" {
            self = isDatagram ? .datagrams : .registrarConnection
        } else if name == "sip-listener" {
            self = .listener
        } else if name.hasPrefix("sip-in-"), let number = Int(name.dropFirst("sip-in-".count)) {
            self = .accepted(number)
        } else {
            return nil
        }
    }

    var description: String {
        switch self {
        case .registrarConnection: "the connection to the registrar"
        case .datagrams: "the UDP socket"
        case .listener: "the listening socket"
        case .accepted(let number): "accepted connection \(number)"
        }
    }
}
