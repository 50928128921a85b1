/// What a ``SIPStreamFramer`` found next on the stream.
public enum SIPStreamItem: Hashable, Sendable {
    /// A complete, validated message.
    case message(SIPMessage)
    /// A double-CRLF keep-alive ping (RFC 5626 3.5.1); the peer expects a single CRLF back.
    case keepAlivePing
    /// A single CRLF: a keep-alive pong, or a line break before a message (RFC 3261 7.5).
    case keepAlivePong
}

/// Cuts a TCP byte stream into SIP messages using Content-Length (RFC 3261 18.3).
///
/// Append bytes as they are read, then call ``next()`` until it returns nil. A message
/// without Content-Length is taken to have an empty body. Any malformed message, or one
/// larger than ``maximumMessageSize``, makes the framer fail: the stream cannot be
/// resynchronised, so the connection should be closed. Once failed, every further
/// ``next()`` throws the same error.
public struct SIPStreamFramer: Sendable {
    /// The largest header section plus body accepted, in bytes.
    public let maximumMessageSize: Int

    private var buffer: [UInt8] = []
    // Bytes before `start` are consumed; they are dropped in bulk, not one message at a time.
    private var start = 0
    // Where to resume looking for the end of the header section, so that a message arriving
    // in many small pieces is not rescanned from its beginning each time.
    private var searchFrom = 0
    private var pending: (head: SIPMessageParser.Head, bodyStart: Int)?
    private var failure: SIPParseError?

    /// A framer refusing messages (header section plus body) over `maximumMessageSize` bytes.
    public init(maximumMessageSize: Int = 65_535) {
        self.maximumMessageSize = maximumMessageSize
    }

    /// Bytes received but not yet returned as items.
    public var bufferedByteCount: Int { buffer.count - start }

    /// Adds bytes read from the stream.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        buffer.append(contentsOf: bytes)
    }

    /// The next complete item, or nil when more bytes are needed.
    public mutating func next() throws(SIPParseError) -> SIPStreamItem? {
        if let failure { throw failure }
        do {
            return try nextItem()
        } catch {
            failure = error
            throw error
        }
    }

    private mutating func nextItem() throws(SIPParseError) -> SIPStreamItem? {
        dropConsumedBytes()
        if pending == nil {
            switch nextKeepAlive() {
            case .found(let item): return item
            case .incomplete: return nil
            case .absent: break
            }
        }
        guard case let (head, bodyStart)? = try pendingHead() else { return nil }
        let bodyLength = head.contentLength ?? 0
        guard bodyStart - start + bodyLength <= maximumMessageSize else { throw .messageTooLarge(limit: maximumMessageSize) }
        guard buffer.count >= bodyStart + bodyLength else { return nil }
        let message = SIPMessage(
            startLine: head.startLine, headers: head.headers, body: Array(buffer[bodyStart..<(bodyStart + bodyLength)]))
        start = bodyStart + bodyLength
        searchFrom = start
        pending = nil
        return .message(message)
    }

    private enum KeepAliveScan {
        case found(SIPStreamItem)
        case incomplete
        case absent
    }

    private mutating func nextKeepAlive() -> KeepAliveScan {
        let available = buffer.count - start
        guard available >= 1, buffer[start] == 0x0D else { return .absent }
        guard available >= 2 else { return .incomplete }
        guard buffer[start + 1] == 0x0A else { return .absent }
        if available >= 4, buffer[start + 2] == 0x0D, buffer[start + 3] == 0x0A {
            start += 4
            searchFrom = start
            return .found(.keepAlivePing)
        }
        // A CR right after the first CRLF may start the second half of a ping: wait for it.
        if available == 3, buffer[start + 2] == 0x0D { return .incomplete }
        start += 2
        searchFrom = start
        return .found(.keepAlivePong)
    }

    // The parsed header section of the message at `start` once it is complete, cached until
    // its body has arrived.
    private mutating func pendingHead() throws(SIPParseError) -> (SIPMessageParser.Head, Int)? {
        if let pending { return pending }
        guard let headerEnd = SIPMessageParser.headerEnd(in: buffer, from: max(start, searchFrom)) else {
            guard buffer.count - start <= maximumMessageSize else { throw .messageTooLarge(limit: maximumMessageSize) }
            searchFrom = max(start, buffer.count - 3)
            return nil
        }
        guard headerEnd - start <= maximumMessageSize else { throw .messageTooLarge(limit: maximumMessageSize) }
        let head = try SIPMessageParser.validatedHead(buffer[start..<(headerEnd - 4)])
        pending = (head, headerEnd)
        return pending
    }

    private mutating func dropConsumedBytes() {
        guard start > 0, start >= buffer.count / 2 else { return }
        buffer.removeFirst(start)
        searchFrom -= start
        if let bodyStart = pending?.bodyStart { pending?.bodyStart = bodyStart - start }
        start = 0
    }
}
