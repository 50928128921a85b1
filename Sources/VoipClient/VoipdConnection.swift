import FoundationEssentials
import Glibc
import VoipdProtocol
import VoipdProtocolIO
import VoipdSystem
import VoipdVocabulary

/// A frame voipd sent on its own initiative (not a reply).
public enum UnsolicitedMessage {
    case event(EventMessage)
    case transition(TransitionRecord)
    /// A background transfer of this app moved bytes.
    case transferProgress(TransferEventMessage)
}

/// One connection to voipd's control socket: numbered requests, their replies (with any
/// descriptors), and the events and transitions that arrive in between, kept in order.
/// Blocking; use it from one thread.
public final class VoipdConnection {
    public let descriptor: FileDescriptor
    public let socketPath: String
    private let codec = WireCodec()
    private var nextRequestID: UInt64 = 1
    private var unsolicited: [UnsolicitedMessage] = []

    /// Connects to the control socket (resolved as voipd resolves it when `path` is nil).
    public init(socketPath path: String? = nil) throws {
        guard let resolved = ControlSocketPath.resolve(explicit: path, variable: environmentVariable, isRoot: geteuid() == 0) else {
            throw VoipdError.unexpected(ControlSocketPath.unresolvedMessage)
        }
        socketPath = resolved
        do {
            descriptor = try Socket.connectUnix(path: resolved)
        } catch let error as Errno {
            throw VoipdError.daemonNotRunning(path: resolved, error)
        }
    }

    /// Sends a request and waits for its reply. Descriptors that come with the reply are
    /// returned in a bag (closed unless taken).
    public func request<Body: Encodable, Result: Codable & Sendable>(
        _ type: MessageType, _ makeBody: (UInt64) -> Body, descriptors: [CInt] = [], expecting: Result.Type,
        timeout: Duration = .seconds(30)
    ) throws -> (Result, DescriptorBag) {
        try exchange(type, descriptors: descriptors, timeout: timeout,
                     packet: { try codec.packet(type, makeBody($0), descriptorCount: descriptors.count) },
                     reply: { try codec.decode(Reply<Result>.self, from: $0) })
    }

    /// The same for a request and a result written and read directly (`status`, `sockets`,
    /// `events`): chosen by their types, so that neither is cast at run time. A cast's first
    /// use looks the conformance up among every one in the program, and a client such as
    /// `voipctl` makes one request in its whole run.
    public func request<Body: DirectJSONEncodable, Result: DirectJSONDecodable & Codable & Sendable>(
        _ type: MessageType, _ makeBody: (UInt64) -> Body, descriptors: [CInt] = [], expecting: Result.Type,
        timeout: Duration = .seconds(30)
    ) throws -> (Result, DescriptorBag) {
        try exchange(type, descriptors: descriptors, timeout: timeout,
                     packet: { try codec.packet(type, makeBody($0), descriptorCount: descriptors.count) },
                     reply: { try codec.decode(Reply<Result>.self, from: $0) })
    }

    /// registerSocket, retrieveSocket or unregisterSocket of the socket `name`, passing
    /// `descriptors`: the socket's status, and the descriptors that came with the reply
    /// (a bag, closed unless taken). What an app does for each held socket, as
    /// ``request(_:_:descriptors:expecting:timeout:)`` does it, with the body and the result
    /// of known types: written and read directly, with no run-time cast or look-up.
    public func socketRequest(_ type: MessageType, name: String, descriptors: [CInt] = []) throws -> (HeldSocketStatus, DescriptorBag) {
        let (result, bag) = try exchange(type, descriptors: descriptors, timeout: .seconds(30),
                                         packet: { try codec.packet(type, SocketNameRequest(id: $0, name: name), descriptorCount: descriptors.count) },
                                         reply: { try codec.decode(Reply<SocketResult>.self, from: $0) })
        return (result.socket, bag)
    }

    /// Sends the packet `packet` makes for the request's id, and waits for the reply,
    /// read by `decodeReply`.
    private func exchange<Result>(_ type: MessageType, descriptors: [CInt], timeout: Duration, packet: (UInt64) throws -> [UInt8],
                                  reply decodeReply: (ArraySlice<UInt8>) throws -> Reply<Result>) throws -> (Result, DescriptorBag) {
        let id = nextRequestID
        nextRequestID += 1
        lastRequestWasNotSent = false
        do {
            try sendPacket(packet(id), descriptors: descriptors)
        } catch VoipdError.disconnected {
            // sendmsg sends the whole frame or fails having sent none of it.
            lastRequestWasNotSent = true
            throw VoipdError.disconnected
        }
        let deadline = MonotonicInstant.now + timeout
        while true {
            let frame = try nextReplyFrame(before: deadline, waitingFor: "the reply to \(type)")
            // Read once as this request's reply; only a body that is not (an earlier
            // request's reply, with another result) is read again for its header.
            let reply: Reply<Result>
            let header: ReplyHeader
            do {
                reply = try decodeReply(frame.body)
                header = ReplyHeader(id: reply.id, ok: reply.ok, error: reply.error)
            } catch {
                header = try decode(ReplyHeader.self, frame.body)
                guard header.id != id || header.error != nil else { throw VoipdError.unexpected("\(error)") }
                reply = Reply(id: header.id, error: header.error ?? ProtocolError(.internalError, "no error"))
            }
            guard header.id == id else {
                // Request 0: about the connection itself (refused at connect, a frame voipd
                // could not read), and so about this request.
                if header.id == 0, let error = header.error { throw VoipdError.refused(error) }
                // A reply to an earlier request that timed out: drop it.
                frame.descriptors.closeAll()
                continue
            }
            if let error = header.error { throw VoipdError.refused(error) }
            guard let result = reply.result else { throw VoipdError.unexpected("a reply without a result") }
            guard reply.more == true else { return (result, frame.descriptors) }
            guard var list = result as? any ListResult else { throw VoipdError.unexpected("a continued reply to \(type)") }
            list = try collectRest(of: list, id: id, deadline: deadline)
            return (list as! Result, frame.descriptors)
        }
    }

    /// The next reply frame, keeping the events and transitions that come before it.
    /// `what` is only made for the error: describing a `MessageType` reflects on it, which
    /// was 40 % of a `voipctl status`.
    private func nextReplyFrame(before deadline: MonotonicInstant, waitingFor what: @autoclosure () -> String) throws -> IncomingFrame {
        while true {
            // Rounded up: 0 only once the deadline has passed. One look at the clock for both.
            let timeout = pollTimeout(until: deadline)
            guard timeout > 0 else { throw VoipdError.timedOut(what()) }
            guard let frame = try receiveFrame(timeoutMilliseconds: timeout) else { continue }
            if frame.type == .reply { return frame }
            try keepUnsolicited(frame)
        }
    }

    /// Reads the continuations of a list reply and appends their items.
    private func collectRest<L: ListResult>(of first: L, id: UInt64, deadline: MonotonicInstant) throws -> L {
        var merged = first
        while true {
            let frame = try nextReplyFrame(before: deadline, waitingFor: "the rest of a reply")
            let reply = try decode(Reply<L>.self, frame.body)
            guard reply.id == id, let part = reply.result else { throw VoipdError.unexpected("an interleaved reply") }
            merged.items += part.items
            if reply.more != true { return merged }
        }
    }

    /// Sends a message that has no reply (an acknowledgement).
    public func post(_ type: MessageType, _ body: some Encodable) throws {
        try sendFrame(type, body)
    }

    /// The same for a body that writes itself (an acknowledgement, at the end of every
    /// wake): no run-time cast to find that it does.
    public func post(_ type: MessageType, _ body: some DirectJSONEncodable) throws {
        try sendPacket(codec.packet(type, body), descriptors: [])
    }

    /// Sends a frame on the (blocking) connection.
    private func sendFrame(_ type: MessageType, _ body: some Encodable, descriptors: [CInt] = []) throws {
        try sendPacket(codec.packet(type, body, descriptorCount: descriptors.count), descriptors: descriptors)
    }

    private func sendPacket(_ packet: [UInt8], descriptors: [CInt]) throws {
        do {
            // A blocking socket waits for room rather than saying it would block.
            guard case .processed = try Socket.send(descriptor, bytes: packet, descriptors: descriptors) else {
                throw VoipdError.system(.wouldBlock)
            }
        } catch let error as Errno {
            throw error == .brokenPipe || error == .connectionReset ? VoipdError.disconnected : VoipdError.system(error)
        }
    }

    /// The next event or transition: one already received, or one that arrives within the
    /// timeout (nil: none came; a negative timeout waits forever).
    public func nextUnsolicited(timeoutMilliseconds: Int32) throws -> UnsolicitedMessage? {
        if !unsolicited.isEmpty { return unsolicited.removeFirst() }
        let deadline = timeoutMilliseconds < 0 ? nil : MonotonicInstant.now + .milliseconds(timeoutMilliseconds)
        var polledOnce = false
        while unsolicited.isEmpty {
            // A zero timeout still looks once.
            if polledOnce, let deadline, MonotonicInstant.now >= deadline { return nil }
            polledOnce = true
            guard let frame = try receiveFrame(timeoutMilliseconds: pollTimeout(until: deadline)) else { continue }
            guard frame.type != .reply else {
                frame.descriptors.closeAll()
                continue
            }
            try keepUnsolicited(frame)
        }
        return unsolicited.removeFirst()
    }

    /// Whether voipd has closed its end (`POLLRDHUP`): requests can only fail on it.
    public var peerHasClosed: Bool { Socket.peerHasClosed(descriptor) }

    /// Whether the last request failed before any of it left this process: its send found
    /// the connection closed by voipd, which so neither read nor did it (``VoipdControl``
    /// makes such a request again on a new connection).
    public private(set) var lastRequestWasNotSent = false

    /// Whether an event or transition is already waiting in this process.
    public var hasBufferedMessages: Bool { !unsolicited.isEmpty }

    private func keepUnsolicited(_ frame: IncomingFrame) throws {
        frame.descriptors.closeAll()
        switch frame.type {
        case .event:
            do {
                return unsolicited.append(.event(try codec.decode(EventMessage.self, from: frame.body)))
            } catch {
                // Read again below, to tell a kind this library does not know from a bad body.
            }
            // An event kind this library does not know (a newer voipd) is acknowledged and
            // skipped, so the daemon is not left waiting for it.
            let probe = try decode(EventProbe.self, frame.body)
            guard AppEventKind(rawValue: probe.kind) != nil else { return try post(.acknowledge, AcknowledgeMessage(event: probe.event)) }
            unsolicited.append(.event(try decode(EventMessage.self, frame.body)))
        case .transition: unsolicited.append(.transition(try decode(TransitionRecord.self, frame.body)))
        case .transferProgress: unsolicited.append(.transferProgress(try decode(TransferEventMessage.self, frame.body)))
        default: throw VoipdError.unexpected("a \(frame.type) frame")
        }
    }

    /// How long one blocking receive waits at most (`SO_RCVTIMEO`, set once), in ms.
    private static let receiveSlice: Int32 = 1000
    private var receiveSliceSet = false

    /// Waits up to the timeout for a frame; nil when none came (or, for a long timeout, none
    /// came within ``receiveSlice``: the caller asks again until its deadline). A wait of a
    /// slice or more is the receive itself, bounded by `SO_RCVTIMEO`: a reply costs one
    /// system call, not a `poll` and then the read. No wait at all (an event the app's own
    /// `poll` found) is the receive too, with `MSG_DONTWAIT`: on a woken app's way to its
    /// socket, a `poll` and its array's allocation less. A shorter one polls first.
    private func receiveFrame(timeoutMilliseconds: Int32) throws -> IncomingFrame? {
        let withoutWaiting = timeoutMilliseconds == 0
        do {
            if timeoutMilliseconds > 0 && timeoutMilliseconds < Self.receiveSlice {
                guard try waitReadable(descriptor, timeoutMilliseconds: timeoutMilliseconds) else { return nil }
            } else if !withoutWaiting && !receiveSliceSet {
                try Socket.setReceiveTimeout(descriptor, milliseconds: Int(Self.receiveSlice))
                receiveSliceSet = true
            }
        } catch {
            throw VoipdError.system(error)
        }
        do {
            switch try codec.receive(from: descriptor, withoutWaiting: withoutWaiting) {
            case .processed(.frame(let frame)): return frame
            case .processed(.endOfStream): throw VoipdError.disconnected
            case .wouldBlock: return nil
            }
        } catch let error as ProtocolError {
            throw VoipdError.unexpected(error.description)
        } catch let error as Errno {
            throw error == .connectionReset ? VoipdError.disconnected : VoipdError.system(error)
        }
    }

    private func decode<T: Decodable>(_ type: T.Type, _ body: ArraySlice<UInt8>) throws -> T {
        do {
            return try codec.decode(type, from: body)
        } catch {
            throw VoipdError.unexpected("\(error)")
        }
    }
}

/// An environment variable's value (`getenv`), nil when it is not set.
func environmentVariable(_ name: String) -> String? {
    getenv(name).map { String(cString: $0) }
}

/// The fields every event has.
private struct EventProbe: Decodable {
    var event: UInt64
    var kind: String
}

/// The fields every reply has.
private struct ReplyHeader: Decodable {
    var id: UInt64
    var ok: Bool
    var error: ProtocolError?
}
