#if canImport(Glibc)
import Glibc
#endif
import VoipdSystem

/// The registrar's poll() loop: accepts TCP connections and receives UDP datagrams, frames
/// and parses messages, passes them through the transaction layer to the router, sends what
/// the router says through the transaction layer again, runs the layer's timers, and reports
/// everything to the observer.
///
/// TCP connections and UDP peers are both flows, numbered from one counter; a UDP peer's
/// flow is its address, kept while it is in use and forgotten, least recently used first,
/// beyond ``maximumDatagramPeers``.
///
/// It is created on the caller's thread, then used only by the registrar's thread until that
/// thread is joined, then by the caller's thread again to close what is left; that hand-over
/// is why it may be marked Sendable without a lock.
final class SIPRegistrarLoop: @unchecked Sendable {
    /// The most UDP peers remembered at once; the one heard from least recently goes first.
    static let maximumDatagramPeers = 1024
    /// Datagrams read per turn, so that a flood on UDP cannot starve the TCP connections.
    static let datagramsPerTurn = 64

    let listener: FileDescriptor
    let datagrams: SIPDatagramSocket
    let port: UInt16
    private let wakeReader: FileDescriptor
    let wakeWriter: FileDescriptor
    private let observer: SIPRegistrar.Observer?
    private let maximumMessageSize: Int
    private var router: SIPProxyRouter
    private var transactions: SIPTransactions<Int>
    private var connections: [Int: SIPRegistrarConnection] = [:]
    private var datagramPeers: [Int: SIPSocketAddress] = [:]
    private var datagramFlows: [SIPSocketAddress: Int] = [:]
    private var datagramPeerUse: [Int: UInt64] = [:]
    private var useCounter: UInt64 = 0
    private var nextConnectionID = 1

    init(
        host: String, port: UInt16, maximumMessageSize: Int, maximumExpires: Int, timers: SIPTimerValues,
        observer: SIPRegistrar.Observer?
    ) throws(SIPSocketError) {
        let bound = try Self.bindBoth(host: host, port: port)
        let datagrams = bound.datagrams
        let wake: DescriptorPair
        do throws(Errno) {
            wake = try makePipe()
        } catch {
            throw SIPSocketError(error)
        }
        self.listener = bound.listener
        self.datagrams = datagrams
        self.port = datagrams.localAddress.port
        self.wakeReader = wake.first
        self.wakeWriter = wake.second
        self.observer = observer
        self.maximumMessageSize = maximumMessageSize
        self.router = SIPProxyRouter(host: host, port: datagrams.localAddress.port, maximumExpires: maximumExpires)
        self.transactions = SIPTransactions(timers: timers, retransmitsSuccessResponses: false)
    }

    // TCP and UDP on the same port, as SIP servers listen. With port 0 the kernel picks the
    // TCP port, which may be taken for UDP: then another is tried.
    private struct BoundSockets: ~Copyable {
        var listener: FileDescriptor
        let datagrams: SIPDatagramSocket
    }

    private static func bindBoth(host: String, port: UInt16) throws(SIPSocketError) -> BoundSockets {
        var attempts = port == 0 ? 16 : 1
        while true {
            let listener = try SIPSocket.listen(host: host, port: port)
            do throws(SIPSocketError) {
                guard let address = SIPSocketAddress(numericHost: host, port: try SIPSocket.localPort(listener)) else {
                    throw SIPSocketError("\(host) is not a numeric address", errno: EINVAL)
                }
                let datagrams = try SIPDatagramSocket(binding: address)
                return BoundSockets(listener: listener, datagrams: datagrams)
            } catch {
                // The listener closes as the loop turns.
                attempts -= 1
                guard error.errno == EADDRINUSE, attempts > 0 else { throw error }
            }
        }
    }

    /// Runs until a byte is written to `wakeWriter`.
    func run() {
        while true {
            let order = connections.values.sorted { $0.id < $1.id }
            var descriptors = [
                pollfd(fd: wakeReader.rawValue, events: Int16(POLLIN), revents: 0),
                pollfd(fd: listener.rawValue, events: Int16(POLLIN), revents: 0),
                pollfd(fd: datagrams.fd, events: Int16(POLLIN), revents: 0),
            ]
            descriptors += order.map { connection in
                pollfd(fd: connection.fd, events: Int16(POLLIN) | (connection.wantsToWrite ? Int16(POLLOUT) : 0), revents: 0)
            }
            do throws(Errno) {
                // An interruption is a turn with nothing ready.
                _ = try poll(&descriptors, timeoutMilliseconds: pollTimeout(until: transactions.nextDeadline()))
            } catch {
                return
            }
            if descriptors[0].revents != 0 { return }
            if descriptors[1].revents != 0 { acceptConnections() }
            if descriptors[2].revents != 0 { receiveDatagrams() }
            for (connection, descriptor) in zip(order, descriptors.dropFirst(3)) where descriptor.revents != 0 {
                service(connection.id, events: descriptor.revents)
            }
            performLayer(transactions.expire(at: .now), source: 0)
        }
    }

    /// Closes every connection. Only after `run()` returned; the listener, the UDP socket and
    /// the wake pipe close with the loop.
    func closeAll() {
        for id in connections.keys.sorted() { closeConnection(id, reason: "registrar stopped") }
    }

    private func acceptConnections() {
        while true {
            let accepted: FileDescriptor
            do throws(SIPSocketError) {
                guard let next = try SIPSocket.accept(listener) else { return }
                accepted = next
            } catch {
                // Out of descriptors, say: the listener stays readable and the next turn tries
                // again; a note per turn would flood the observer.
                return
            }
            let connection = SIPRegistrarConnection(id: nextConnectionID, descriptor: accepted, maximumMessageSize: maximumMessageSize)
            nextConnectionID += 1
            connections[connection.id] = connection
            router.flowTransports[connection.id] = .tcp
            report(connection.id, .connectionOpened)
        }
    }

    private func receiveDatagrams() {
        for _ in 0..<Self.datagramsPerTurn {
            let received: SIPDatagramSocket.Received
            do {
                received = try datagrams.receive()
            } catch {
                return report(0, .note("UDP: \(error)"))
            }
            switch received {
            case .nothing:
                return
            case .oversized(let sender):
                report(flow(for: sender), .note("dropped a datagram over \(SIPDatagramSocket.maximumDatagramSize) bytes"))
            case .datagram(let bytes, let sender):
                let flow = flow(for: sender)
                do {
                    guard var message = try SIPDatagram.message(in: bytes, maximumSize: maximumMessageSize) else { continue }
                    message.noteSource(sender)
                    handle(message, from: flow, over: .udp)
                } catch {
                    // One bad datagram costs only itself (RFC 3261 18.3).
                    report(flow, .note("dropped an unreadable datagram: \(error)"))
                }
            }
        }
    }

    /// The flow of a UDP peer: the one it had, or a new one.
    private func flow(for address: SIPSocketAddress) -> Int {
        useCounter += 1
        if let id = datagramFlows[address] {
            datagramPeerUse[id] = useCounter
            return id
        }
        if datagramPeers.count >= Self.maximumDatagramPeers, let (oldest, _) = datagramPeerUse.min(by: { $0.value < $1.value }) {
            forgetDatagramPeer(oldest)
        }
        let id = nextConnectionID
        nextConnectionID += 1
        datagramPeers[id] = address
        datagramFlows[address] = id
        datagramPeerUse[id] = useCounter
        router.flowTransports[id] = .udp
        return id
    }

    private func forgetDatagramPeer(_ id: Int) {
        guard let address = datagramPeers.removeValue(forKey: id) else { return }
        report(id, .note("forgot UDP peer \(address): \(Self.maximumDatagramPeers) peers in use"))
        datagramFlows[address] = nil
        datagramPeerUse[id] = nil
        transactions.flowClosed(id)
        perform(router.connectionClosed(id), for: id)
    }

    private func service(_ id: Int, events: Int16) {
        guard let connection = connections[id] else { return }
        if events & Int16(POLLOUT) != 0, let failure = connection.flush() {
            return closeConnection(id, reason: failure)
        }
        guard events & (Int16(POLLIN) | Int16(POLLHUP) | Int16(POLLERR)) != 0 else { return }
        switch connection.read() {
        case .wouldBlock: return
        case .closed(let reason): return closeConnection(id, reason: reason)
        case .data: break
        }
        do {
            while let item = try connection.framer.next() {
                switch item {
                case .message(let message):
                    handle(message, from: id, over: .tcp)
                case .keepAlivePing:
                    // RFC 5626 3.5.1: a CRLF pong answers a double-CRLF ping.
                    if let failure = connection.send(Array("\r\n".utf8)) { return closeConnection(id, reason: failure) }
                case .keepAlivePong:
                    break
                }
                guard connections[id] != nil else { return }
            }
        } catch {
            closeConnection(id, reason: "framing error: \(error)")
        }
    }

    private func handle(_ message: SIPMessage, from flow: Int, over transport: SIPTransport) {
        report(flow, .received(message))
        performLayer(transactions.receive(message, from: flow, over: transport, at: .now), source: flow)
    }

    /// Does what the transaction layer says: writes, hands messages to the router.
    private func performLayer(_ outputs: [SIPTransactions<Int>.Output], source: Int) {
        for output in outputs {
            switch output {
            case .transmit(let message, let target): write(message, to: target, for: source)
            case .deliver(let message, let flow): perform(router.handle(message, from: flow, at: .now), for: flow)
            case .unacknowledged(let response): report(source, .note("no ACK came for \(response.summary)"))
            case .note(let text): report(source, .note(text))
            }
        }
    }

    /// Does what the router says: every message goes through the transaction layer.
    private func perform(_ outputs: [SIPProxyRouter.Output], for source: Int) {
        for output in outputs {
            switch output {
            case .note(let text):
                report(source, .note(text))
            case .send(let message, let target):
                performLayer(transactions.send(message, to: target, over: router.transport(of: target), at: .now), source: source)
            }
        }
    }

    private func write(_ message: SIPMessage, to target: Int, for source: Int) {
        if let connection = connections[target] {
            report(target, .sent(message))
            if let failure = connection.send(message.serialized()) { closeConnection(target, reason: failure) }
        } else if let address = datagramPeers[target] {
            report(target, .sent(message))
            do {
                try datagrams.send(message.serialized(), to: address)
            } catch {
                // A datagram is sent or lost; the transaction layer retransmits or times out.
                report(target, .note("\(error)"))
            }
        } else {
            report(source, .note("dropped \(message.summary): connection \(target) is gone"))
        }
    }

    private func closeConnection(_ id: Int, reason: String) {
        guard let connection = connections[id] else { return }
        report(id, .connectionClosed(reason: reason))
        connections[id] = nil
        connection.close()
        transactions.flowClosed(id)
        perform(router.connectionClosed(id), for: id)
    }

    private func report(_ id: Int, _ kind: SIPTrafficEvent.Kind) {
        guard let observer else { return }
        let peer = connections[id]?.peer ?? datagramPeers[id]?.description ?? "-"
        let transport: SIPTransport = datagramPeers[id] != nil ? .udp : .tcp
        observer(SIPTrafficEvent(time: .now, connection: id, peer: peer, transport: transport, kind: kind))
    }
}
