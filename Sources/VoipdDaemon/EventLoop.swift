import VoipdSystem

/// What a ready descriptor in the epoll set is.
enum EventSource {
    case listener
    case signals
    case timer
    case memoryPressure
    case client(UInt64)
    case heldSocket(UInt64)
    case process(String)
}

/// The epoll set and what each registration stands for. Every registration gets a token
/// that is never reused, so an event for a registration removed earlier in the same batch
/// is recognised and dropped.
final class EventLoop {
    let epoll: Epoll
    private var sources: [UInt64: EventSource] = [:]
    private var nextToken: UInt64 = 1

    init() throws { epoll = try Epoll() }

    func register(_ fd: CInt, _ events: EpollEvents, _ source: EventSource) throws -> UInt64 {
        let token = nextToken
        nextToken += 1
        try epoll.add(fd, events: events, token: token)
        sources[token] = source
        return token
    }

    func modify(_ fd: CInt, _ events: EpollEvents, token: UInt64) throws {
        try epoll.modify(fd, events: events, token: token)
    }

    /// Removes a registration; the descriptor itself is closed by its owner afterwards.
    func deregister(_ fd: CInt, token: UInt64) {
        sources[token] = nil
        try? epoll.remove(fd)
    }

    func source(for token: UInt64) -> EventSource? { sources[token] }
}
