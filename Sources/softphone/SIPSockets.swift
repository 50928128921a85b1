import Glibc
import SIP

/// The softphone's SIP sockets, for either transport, and the framing of what they bring:
/// - over TCP, the connection it opens to the registrar (opened again when it ends) and,
///   with `--listen`, a listening socket and the connections accepted on it;
/// - over UDP, one socket: bound to the `--listen` address and receiving from anyone, or
///   bound to an ephemeral port and connected to the registrar, receiving from it alone.
///
/// Every socket stays as the app registered it with voipd; nothing here talks to voipd.
final class SIPSockets {
    /// What reading or writing brought.
    enum Event {
        case message(SIPMessage, from: SIPFlow)
        /// A new socket, to be handed to voipd as a VoIP socket.
        case opened(SIPSocketRole, fd: Int32, detail: String)
        /// A connection ended and is closed.
        case closed(SIPSocketRole, SIPFlow, reason: String)
        case log(String)
    }

    /// A TCP connection and the framer cutting its stream into messages.
    private final class Stream {
        let id: Int
        let role: SIPSocketRole
        let connection: TCPConnection
        var framer = SIPStreamFramer()

        init(id: Int, role: SIPSocketRole, connection: TCPConnection) {
            self.id = id
            self.role = role
            self.connection = connection
        }
    }

    /// Datagrams read in one go before the others get a turn; a wake drains them all.
    static let datagramsPerRead = 64

    let transport: SIPTransport
    private(set) var datagrams: SIPDatagramSocket?
    private(set) var listener: TCPListener?
    private var streams: [Int: Stream] = [:]
    /// The connection to the registrar, while there is one.
    private(set) var outbound: Int?
    private var nextStreamID = 1
    private var nextAcceptedNumber = 1

    init(transport: SIPTransport) {
        self.transport = transport
    }

    /// Every descriptor to poll for reading.
    var descriptors: [Int32] {
        [datagrams?.fd, listener?.fd].compactMap { $0 } + streams.keys.sorted().compactMap { streams[$0]?.connection.fd }
    }

    /// The flow of the connection to the registrar, if open.
    var outboundFlow: SIPFlow? { outbound.map { .connection($0) } }

    /// The UDP socket, bound to `address` and, unless nil, connected to `peer`.
    func openDatagrams(binding address: SIPSocketAddress, connectingTo peer: SIPSocketAddress?) throws(SIPSocketError) -> [Event] {
        let socket = try SIPDatagramSocket(binding: address)
        if let peer { try socket.connect(to: peer) }
        datagrams = socket
        let detail = "UDP \(socket.localAddress)" + (peer.map { ", connected to \($0)" } ?? ", receiving from anyone")
        return [.opened(.datagrams, fd: socket.fd, detail: detail)]
    }

    /// The listening TCP socket at `address`.
    func openListener(at address: SIPSocketAddress) throws(NetworkError) -> [Event] {
        let opened = try TCPListener(address: address)
        listener = opened
        return [.opened(.listener, fd: opened.fd, detail: "TCP listening on \(opened.localAddress)")]
    }

    /// Opens the connection to the registrar.
    func connectOutbound(to registrar: HostPort, timeout: Duration) throws(NetworkError) -> (SIPFlow, [Event]) {
        let connection = try TCPConnection.connect(to: registrar, timeout: timeout)
        let stream = add(connection, role: .registrarConnection)
        outbound = stream.id
        return (.connection(stream.id), [
            .log("connected to \(connection.remoteAddress) from \(connection.localAddress)"),
            .opened(.registrarConnection, fd: connection.fd, detail: "TCP \(connection.localAddress) to \(connection.remoteAddress)"),
        ])
    }

    /// Takes a socket voipd handed back after a relaunch, in the role it had. Nothing is
    /// registered with voipd again: it holds the socket already.
    func adopt(_ fd: Int32, as role: SIPSocketRole) throws -> (SIPFlow?, String) {
        switch role {
        case .datagrams:
            let socket = try SIPDatagramSocket(adopting: fd)
            datagrams = socket
            return (nil, "UDP \(socket.localAddress)" + (socket.connectedPeer.map { ", connected to \($0)" } ?? ""))
        case .listener:
            let adopted = try TCPListener(adopting: fd)
            listener = adopted
            return (nil, "TCP listening on \(adopted.localAddress)")
        case .registrarConnection, .accepted:
            let connection = TCPConnection(adopting: fd)
            let stream = add(connection, role: role)
            if role == .registrarConnection { outbound = stream.id }
            if case .accepted(let number) = role { nextAcceptedNumber = max(nextAcceptedNumber, number + 1) }
            return (.connection(stream.id), "TCP \(connection.localAddress) to \(connection.remoteAddress)")
        }
    }

    /// Reads what the socket `fd` has: datagrams, new connections, or bytes of a stream.
    func readAvailable(_ fd: Int32) -> [Event] {
        if let datagrams, datagrams.fd == fd { return receiveDatagrams(upTo: Self.datagramsPerRead) }
        if let listener, listener.fd == fd { return acceptConnections(listener) }
        guard let stream = streams.values.first(where: { $0.connection.fd == fd }) else { return [] }
        return read(stream).events
    }

    /// Reads everything every socket has now, datagrams to the last: what a wake needs
    /// before it is acknowledged.
    func readEverything() -> [Event] {
        var events: [Event] = []
        if datagrams != nil { events += receiveDatagrams(upTo: .max) }
        if let listener { events += acceptConnections(listener) }
        for id in streams.keys.sorted() {
            guard let stream = streams[id] else { continue }
            // One read may leave bytes behind (a full buffer): read until there is nothing.
            while streams[id] != nil {
                let (read, progressed) = read(stream)
                events += read
                if !progressed { break }
            }
        }
        return events
    }

    /// Sends `message` to `flow`; a connection that fails is closed.
    func send(_ message: SIPMessage, to flow: SIPFlow) -> [Event] {
        switch flow {
        case .datagram(let address):
            guard let datagrams else { return [.log("not sent, no UDP socket: \(message.summary)")] }
            do {
                try datagrams.send(message.serialized(), to: address)
                return []
            } catch {
                // A datagram lost: the transaction layer sends it again or times out.
                return [.log("not sent: \(message.summary): \(error)")]
            }
        case .connection(let id):
            guard let stream = streams[id] else { return [.log("not sent, \(flow) is closed: \(message.summary)")] }
            return send(message.serialized(), on: stream)
        }
    }

    private func send(_ bytes: [UInt8], on stream: Stream) -> [Event] {
        do {
            try stream.connection.send(bytes)
            return []
        } catch {
            return close(stream, reason: "\(error)")
        }
    }

    private func add(_ connection: TCPConnection, role: SIPSocketRole) -> Stream {
        let stream = Stream(id: nextStreamID, role: role, connection: connection)
        nextStreamID += 1
        streams[stream.id] = stream
        return stream
    }

    private func close(_ stream: Stream, reason: String) -> [Event] {
        guard streams.removeValue(forKey: stream.id) != nil else { return [] }
        if outbound == stream.id { outbound = nil }
        return [.closed(stream.role, .connection(stream.id), reason: reason)]
    }

    private func receiveDatagrams(upTo limit: Int) -> [Event] {
        guard let datagrams else { return [] }
        var events: [Event] = []
        var count = 0
        while count < limit {
            count += 1
            do {
                switch try datagrams.receive() {
                case .nothing:
                    return events
                case .oversized(let sender):
                    events.append(.log("dropped a datagram from \(sender) over \(SIPDatagramSocket.maximumDatagramSize) bytes"))
                case .datagram(let bytes, let sender):
                    do {
                        if let message = try SIPDatagram.message(in: bytes) { events.append(.message(message, from: .datagram(sender))) }
                    } catch {
                        // RFC 3261 18.3: a bad datagram costs only itself.
                        events.append(.log("dropped an unreadable datagram from \(sender): \(error)"))
                    }
                }
            } catch {
                return events + [.log("\(error)")]
            }
        }
        return events
    }

    private func acceptConnections(_ listener: TCPListener) -> [Event] {
        do {
            return try listener.acceptPending().flatMap { connection -> [Event] in
                let role = SIPSocketRole.accepted(nextAcceptedNumber)
                nextAcceptedNumber += 1
                let stream = add(connection, role: role)
                return [
                    .log("accepted connection \(stream.id) from \(connection.remoteAddress) on \(connection.localAddress)"),
                    .opened(role, fd: connection.fd, detail: "TCP \(connection.localAddress) from \(connection.remoteAddress)"),
                ]
            }
        } catch {
            return [.log("\(error)")]
        }
    }

    /// One read of `stream`, and whether it brought bytes.
    private func read(_ stream: Stream) -> (events: [Event], progressed: Bool) {
        switch stream.connection.read() {
        case .nothing:
            return ([], false)
        case .closed(let reason):
            return (close(stream, reason: reason), false)
        case .bytes(let bytes):
            stream.framer.append(bytes)
        }
        var events: [Event] = []
        do {
            while let item = try stream.framer.next() {
                switch item {
                case .message(let message): events.append(.message(message, from: .connection(stream.id)))
                // RFC 5626 3.5.1: a CRLF pong answers a double-CRLF ping.
                case .keepAlivePing: events += send(Array("\r\n".utf8), on: stream)
                case .keepAlivePong: break
                }
            }
        } catch {
            events += close(stream, reason: "unreadable SIP: \(error)")
        }
        return (events, true)
    }
}
