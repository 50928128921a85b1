import Glibc
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary
import VoipdProtocolIO

extension Daemon {
    func serviceClient(_ client: ClientConnection, _ events: EpollEvents) {
        if events.contains(.writable) { flush(client) }
        guard events.contains(.readable) || events.contains(.hangup) || events.contains(.error) else { return }
        // Its requests wait until a list reply under way is written (the loop watches only
        // for room then); a hang-up ends it.
        if client.listing != nil {
            if !events.isDisjoint(with: [.hangup, .error]) { closeClient(client) }
            return
        }
        // One frame per report: the connection is watched level-triggered, so the loop's
        // next wait reports it again at once while another frame waits. A client that waits
        // for each answer (an app, voipctl) costs no read that finds nothing after each
        // request, and a busy one gets a turn like every other ready source, not a batch.
        guard clients[client.id] != nil, !client.closing, client.listing == nil else { return }
        let received: IOResult<Received>
        do {
            received = try codec.receive(from: client.descriptor, maxDescriptors: MessageType.descriptorRoomFromClient)
        } catch let error as ProtocolError {
            metrics.protocolErrors += 1
            log.info("client \(client.id) (pid \(client.credentials.pid)): \(error)")
            sendError(error, request: 0, to: client)
            return closeClient(client)
        } catch {
            log.info("client \(client.id): \(error)")
            return closeClient(client)
        }
        switch received {
        case .wouldBlock: return
        case .processed(.endOfStream): return closeClient(client)
        case .processed(.frame(let frame)):
            // A wake first: a call must not wait behind a flood of requests. The held
            // sockets are looked at before every request; for the first one after the
            // loop's wait, that wait was the look.
            if !loop.urgentLooked { serveHeldSockets() }
            loop.urgentLooked = false
            guard clients[client.id] != nil, !client.closing else {
                frame.descriptors.closeAll()
                return
            }
            // A wake served just before it left bookkeeping the request may read or change.
            settleWakeBookkeeping()
            handleFrame(frame, from: client)
        }
    }

    private func handleFrame(_ frame: IncomingFrame, from client: ClientConnection) {
        defer { frame.descriptors.closeAll() }
        client.lastRequestAt = now
        do {
            // Checked before the descriptor counts that ClientRequest checks: the ones that
            // arrived are fewer than were sent, and not through the client's fault.
            if frame.descriptorsLost && frame.type.isRequest {
                throw ProtocolError(.outOfResources, "voipd is out of descriptors and could not take the ones sent with \(frame.type); try again later")
            }
            try handleRequest(frame, from: client)
        } catch let error as ProtocolError {
            metrics.protocolErrors += 1
            log.info("client \(client.id) (pid \(client.credentials.pid)): \(frame.type) refused: \(error)")
            sendError(error, request: requestID(of: frame), to: client)
            if error.closesConnection { closeClient(client) }
        } catch {
            sendError(ProtocolError(systemError: error, "\(frame.type)"), request: requestID(of: frame), to: client)
        }
    }

    /// The id to answer a frame under when its typed body does not say it: a refusal (the
    /// body may not even decode as its type) or a request without fields. Read only then:
    /// the request path reads each body once.
    private func requestID(of frame: IncomingFrame) -> UInt64 {
        (try? codec.decode(RequestID.self, from: frame.body))?.id ?? 0
    }

    private func handleRequest(_ frame: IncomingFrame, from client: ClientConnection) throws {
        switch try ClientRequest(type: frame.type, body: frame.body, descriptorCount: frame.descriptors.count, codec: codec) {
        case .hello(let request): try hello(request, from: client)
        case .registerSocket(let request): try registerSocket(request, descriptors: frame.descriptors, from: client)
        case .unregisterSocket(let request): try unregisterSocket(request, from: client)
        case .retrieveSocket(let request): try retrieveSocket(request, from: client)
        case .acknowledge(let message): try acknowledge(message, from: client)
        case .beginBackgroundTask(let request): try beginBackgroundTask(request, from: client)
        case .endBackgroundTask(let request): try endBackgroundTask(request, from: client)
        case .setKeepAliveTimeout(let request): try setKeepAlive(request, from: client)
        case .setAudioSessionActive(let request): try setAudioSessionActive(request, from: client)
        case .transferSession(let request): try transferSession(request, from: client)
        case .transferCreate(let request): try transferCreate(request, from: client)
        case .transferTask(let request): try transferTask(request, from: client)
        case .launch(let request): try launch(request, descriptors: frame.descriptors, from: client)
        case .status(let request): try status(request, from: client)
        case .sockets(let request): try sockets(request, from: client)
        case .appCommand(let request): try appCommand(request, from: client)
        case .systemCommand(let request): try systemCommand(request, from: client)
        case .events(let request): try eventsRequest(request, from: client)
        case .stats: reply(requestID(of: frame), StatsResult(prometheus: prometheusText()), to: client)
        case .upgrade(let request): try upgradeRequest(request, from: client)
        case .transfers(let request): try transfersRequest(request, from: client)
        }
    }

    // MARK: - Sending

    /// Replies with `result`, passing `descriptors` (closed here once sent).
    func reply<R: Codable & Sendable>(_ id: UInt64, _ result: R, to client: ClientConnection, passing descriptors: DescriptorBag? = nil) {
        send(.reply, Reply(id: id, result: result), to: client, passing: descriptors)
    }

    /// Replies with a result that writes itself: the request path's replies, encoded with
    /// no run-time cast or look-up (``WireCodec/packet(_:_:descriptorCount:)``, inlined).
    func reply<R: Codable & Sendable & DirectJSONEncodable>(_ id: UInt64, _ result: R, to client: ClientConnection,
                                                             passing descriptors: DescriptorBag? = nil) {
        send(.reply, Reply(id: id, result: result), to: client, passing: descriptors)
    }

    /// Replies with a list, split over several frames when it does not fit in one.
    func replyList<R: ListResult>(_ id: UInt64, _ result: R, to client: ClientConnection) {
        replyInChunks(id, result, to: client)
    }

    /// A list encoded whole, then again chunk by chunk when it does not fit in one frame.
    private func replyInChunks<R: ListResult>(_ id: UInt64, _ result: R, to client: ClientConnection) {
        // The envelope and the list's brackets and commas, with room to spare.
        let overhead = 512
        let budget = Frame.maximumSize - Frame.headerSize - overhead
        guard codec.encodedSize(Reply(id: id, result: result)) > budget + overhead / 2 else {
            return reply(id, result, to: client)
        }
        let chunks = replyChunks(of: result.items, budget: budget) { codec.encodedSize($0) + 1 }
        for (index, chunk) in chunks.enumerated() {
            send(.reply, Reply(id: id, result: R(items: chunk), more: index < chunks.count - 1), to: client)
        }
    }

    /// Replies with a list whose items encode directly, every frame written at once and sent
    /// or queued: each item written once, as ``streamList(_:_:to:next:)`` does, but nothing
    /// held back for a client that does not read. `status` replies go this way (they were
    /// encoded twice by JSONEncoder, to measure them and to send them): a client that asks
    /// for them without reading still meets its queue's bound and is disconnected, rather
    /// than having its requests wait behind a listing under way.
    func replyWhole<R: ListResult & DirectJSONEncodable>(_ id: UInt64, _ result: R, to client: ClientConnection) where R.Item: DirectJSONEncodable {
        guard var writer = ListReplyWriter<R>(id: id) else { return replyInChunks(id, result, to: client) }
        for packet in writer.packets(of: result.items) {
            guard packet.count <= Frame.maximumSize else {
                // As a list encoded whole leaves it out (docs/PROTOCOL.md).
                log.error("client \(client.id): an item of a list reply does not fit in a frame (\(packet.count) bytes); left out")
                continue
            }
            send(packet: packet, to: client)
        }
    }

    /// Replies with a list whose items encode directly (``streamList(_:_:to:next:)``).
    func replyList<R: ListResult & DirectJSONEncodable>(_ id: UInt64, _ result: R, to client: ClientConnection) where R.Item: DirectJSONEncodable {
        var items = result.items.makeIterator()
        streamList(id, R.self, to: client) { items.next() }
    }

    /// Replies with the list `next` gives item by item, a frame at a time as the client's
    /// socket takes them: each item is encoded once, when its frame is written, and what
    /// waits for a slow reader is a frame, not the whole list (a list longer than the
    /// client's queue bound is not refused).
    func streamList<R: ListResult & DirectJSONEncodable>(_ id: UInt64, _ list: R.Type, to client: ClientConnection,
                                                         next: @escaping () -> R.Item?) where R.Item: DirectJSONEncodable {
        guard !client.closing else { return }
        guard var writer = ListReplyWriter<R>(id: id) else {
            var items: [R.Item] = []
            while let item = next() { items.append(item) }
            return replyInChunks(id, R(items: items), to: client)
        }
        client.listing = { writer.nextPacket(next) }
        continueListing(client)
    }

    /// Writes the list reply under way while the kernel takes its frames; the frame it
    /// refuses waits in the queue, and the rest comes when there is room (``flush(_:)``).
    private func continueListing(_ client: ClientConnection) {
        while client.outbound.isEmpty, let listing = client.listing {
            guard let packet = listing() else {
                client.listing = nil
                break
            }
            guard packet.count <= Frame.maximumSize else {
                // As a list encoded whole leaves it out (docs/PROTOCOL.md).
                log.error("client \(client.id): an item of a list reply does not fit in a frame (\(packet.count) bytes); left out")
                continue
            }
            do {
                if case .processed = try Socket.send(client.descriptor, bytes: packet, descriptors: []) { continue }
            } catch {
                log.debug("client \(client.id): send failed: \(error)")
                return closeClient(client)
            }
            guard enqueue(packet, DescriptorBag(), for: client) else { return }
        }
        watch(client, writable: !client.outbound.isEmpty)
    }

    /// Puts the rest of a list reply under way in the client's queue (an upgrade carries
    /// queues, not lists being written), past its bound.
    func queueListing(of client: ClientConnection) {
        guard let listing = client.listing else { return }
        client.listing = nil
        while let packet = listing() {
            guard packet.count <= Frame.maximumSize else { break }
            let cost = ClientQueues.cost(of: packet, descriptors: 0)
            client.outbound.append((packet, DescriptorBag()))
            client.queuedBytes += cost
            clients.queues.totalBytes += cost
        }
    }

    func sendError(_ error: ProtocolError, request: UInt64, to client: ClientConnection) {
        send(.reply, Reply<EmptyResult>(id: request, error: error), to: client)
    }

    /// Sends a frame with `descriptors` (the bag's, closed once they are sent); what the
    /// kernel cannot take now waits in the client's queue, with the bag, until the socket
    /// is writable.
    func send(_ type: MessageType, _ body: some Encodable, to client: ClientConnection, passing descriptors: DescriptorBag? = nil) {
        sendEncoded(type, to: client, passing: descriptors) { try codec.packet(type, body, descriptorCount: $0) }
    }

    /// Sends a frame whose body writes itself, as ``send(_:_:to:passing:)`` does.
    func send(_ type: MessageType, _ body: some DirectJSONEncodable, to client: ClientConnection, passing descriptors: DescriptorBag? = nil) {
        sendEncoded(type, to: client, passing: descriptors) { try codec.packet(type, body, descriptorCount: $0) }
    }

    /// Sends the packet `encode` makes for the number of descriptors passed.
    private func sendEncoded(_ type: MessageType, to client: ClientConnection, passing descriptors: DescriptorBag?, encode: (Int) throws -> [UInt8]) {
        guard !client.closing else { return }
        let packet: [UInt8]
        do {
            packet = try encode(descriptors?.count ?? 0)
        } catch {
            return log.error("cannot encode \(type) for client \(client.id): \(error)")
        }
        send(packet: packet, to: client, passing: descriptors)
    }

    /// Sends an encoded packet, as ``send(_:_:to:passing:)`` does.
    func send(packet: [UInt8], to client: ClientConnection, passing descriptors: DescriptorBag? = nil) {
        guard !client.closing else { return }
        if client.outbound.isEmpty {
            do {
                if case .processed = try Socket.send(client.descriptor, bytes: packet, descriptors: descriptors?.borrowedNumbers ?? []) {
                    return
                }
            } catch {
                log.debug("client \(client.id): send failed: \(error)")
                return closeClient(client)
            }
        }
        guard enqueue(packet, descriptors ?? DescriptorBag(), for: client) else { return }
        watch(client, writable: true)
    }

    /// Sends a frame passing one descriptor voipd keeps (a held socket's) if the socket takes
    /// it now: the number is lent to `sendmsg` as it is (the kernel passes the open file, not
    /// the number), no copy made and closed. False when the frame would have to wait in the
    /// queue, where the descriptor could be closed before it goes: the caller sends a copy.
    func sendNow(_ type: MessageType, _ body: some DirectJSONEncodable, to client: ClientConnection, lending descriptor: borrowing FileDescriptor) -> Bool {
        guard !client.closing else { return true }
        guard client.outbound.isEmpty else { return false }
        let packet: [UInt8]
        do {
            packet = try codec.packet(type, body, descriptorCount: 1)
        } catch {
            log.error("cannot encode \(type) for client \(client.id): \(error)")
            return true
        }
        do {
            if case .processed = try Socket.send(client.descriptor, bytes: packet, descriptors: [descriptor.rawValue]) { return true }
        } catch {
            log.debug("client \(client.id): send failed: \(error)")
            closeClient(client)
            return true
        }
        return false
    }

    func flush(_ client: ClientConnection) {
        while let (packet, bag) = client.outbound.first {
            do {
                guard case .processed = try Socket.send(client.descriptor, bytes: packet, descriptors: bag.borrowedNumbers) else { return }
            } catch {
                return closeClient(client)
            }
            dequeueFirst(of: client)
        }
        if client.listing != nil { return continueListing(client) }
        watch(client, writable: false)
    }

    /// Whether the loop reports the client's socket writable, as well as readable: only while
    /// something waits in its queue.
    private func watch(_ client: ClientConnection, writable: Bool) {
        do {
            // A list reply under way: only room for its next frame is watched for.
            let events: EpollEvents = client.listing != nil ? [.writable] : writable ? [.readable, .writable] : [.readable]
            try loop.modify(client.descriptor, events, token: client.token)
        } catch {
            log.warning("client \(client.id): cannot watch its connection: \(error); disconnecting it")
            closeClient(client)
        }
    }

    /// Closes a connection: its app, if any, is told the lifecycle it has no connection.
    func closeClient(_ client: ClientConnection) {
        guard clients.removeValue(forKey: client.id) != nil else { return }
        client.closing = true
        client.listing = nil
        discardQueue(of: client)
        loop.deregister(client.descriptor, token: client.token)
        timers.cancel(.helloTimeout(client.id))
        // A descriptor is free again (when the connection goes, just below).
        if clients.admission.paused { resumeAccepting() }
        log.debug("client \(client.id) disconnected")
        if let name = client.appName, let app = apps[name], app.client == client.id {
            app.client = nil
            feedLater(app, .disconnected)
        }
        for app in apps.values { app.launchWaiters.removeAll { $0.client == client.id } }
        // The descriptor is closed when the last reference to the connection goes (now).
    }
}
