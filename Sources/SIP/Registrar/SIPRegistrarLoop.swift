#if canImport(Glibc)
import Glibc
#endif

/// The registrar's poll() loop: accepts connections, reads and frames messages, asks the
/// router what to do, writes the results and reports everything to the observer.
///
/// It is created on the caller's thread, then used only by the registrar's thread until that
/// thread is joined, then by the caller's thread again to close what is left; that hand-over
/// is why it may be marked Sendable without a lock.
final class SIPRegistrarLoop: @unchecked Sendable {
    let listener: Int32
    let port: UInt16
    private let wakeReader: Int32
    let wakeWriter: Int32
    private let observer: SIPRegistrar.Observer?
    private let maximumMessageSize: Int
    private var router: SIPProxyRouter
    private var connections: [Int: SIPRegistrarConnection] = [:]
    private var nextConnectionID = 1

    init(host: String, port: UInt16, maximumMessageSize: Int, observer: SIPRegistrar.Observer?) throws(SIPSocketError) {
        let (listener, boundPort) = try SIPSocket.listen(host: host, port: port)
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else {
            Glibc.close(listener)
            throw SIPSocketError("pipe")
        }
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        SIPSocket.setNonBlocking(listener)
        self.listener = listener
        self.port = boundPort
        self.wakeReader = pipeEnds[0]
        self.wakeWriter = pipeEnds[1]
        self.observer = observer
        self.maximumMessageSize = maximumMessageSize
        self.router = SIPProxyRouter(host: host, port: boundPort)
    }

    /// Runs until a byte is written to `wakeWriter`.
    func run() {
        while true {
            let order = connections.values.sorted { $0.id < $1.id }
            var descriptors = [pollfd(fd: wakeReader, events: Int16(POLLIN), revents: 0), pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            descriptors += order.map { connection in
                pollfd(fd: connection.fd, events: Int16(POLLIN) | (connection.wantsToWrite ? Int16(POLLOUT) : 0), revents: 0)
            }
            let ready = poll(&descriptors, nfds_t(descriptors.count), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if descriptors[0].revents != 0 { return }
            if descriptors[1].revents != 0 { acceptConnections() }
            for (connection, descriptor) in zip(order, descriptors.dropFirst(2)) where descriptor.revents != 0 {
                service(connection.id, events: descriptor.revents)
            }
        }
    }

    /// Closes every connection, the listener and the wake pipe. Only after `run()` returned.
    func closeAll() {
        for id in connections.keys.sorted() { closeConnection(id, reason: "registrar stopped") }
        Glibc.close(listener)
        Glibc.close(wakeReader)
        Glibc.close(wakeWriter)
    }

    private func acceptConnections() {
        while let fd = try? SIPSocket.accept(listener) {
            let connection = SIPRegistrarConnection(id: nextConnectionID, fd: fd, maximumMessageSize: maximumMessageSize)
            nextConnectionID += 1
            connections[connection.id] = connection
            report(connection.id, .connectionOpened)
        }
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
                    report(id, .received(message))
                    perform(router.handle(message, from: id, at: .now), for: id)
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

    private func perform(_ outputs: [SIPProxyRouter.Output], for source: Int) {
        for output in outputs {
            switch output {
            case .note(let text):
                report(source, .note(text))
            case .send(let message, let target):
                guard let connection = connections[target] else {
                    report(source, .note("dropped \(message.summary): connection \(target) is gone"))
                    continue
                }
                report(target, .sent(message))
                if let failure = connection.send(message.serialized()) { closeConnection(target, reason: failure) }
            }
        }
    }

    private func closeConnection(_ id: Int, reason: String) {
        guard let connection = connections[id] else { return }
        report(id, .connectionClosed(reason: reason))
        connections[id] = nil
        connection.close()
        perform(router.connectionClosed(id), for: id)
    }

    private func report(_ id: Int, _ kind: SIPTrafficEvent.Kind) {
        guard let observer else { return }
        let peer = connections[id]?.peer ?? "-"
        observer(SIPTrafficEvent(time: .now, connection: id, peer: peer, kind: kind))
    }
}
