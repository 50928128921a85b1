import VoipdSystem

/// What a ready descriptor in the epoll set is.
enum EventSource {
    case listener
    case signals
    case timer
    case memoryPressure
    case client(UInt64)
    case heldSocket(UInt64)
    /// An ordinary socket of a suspended app whose receive queue voipd watches.
    case watchedQueue(UInt64)
    case process(AppID)
    /// An app's `cgroup.events` (`EPOLLPRI`), registered only while its freeze awaits confirmation.
    case cgroupEvents(AppID)
    /// A descriptor of the background-transfer service (an agent's socket or pidfd), by the service's token.
    case transfer(UInt64)
    /// The kernel's power-supply events or rtnetlink (``ConditionsWatch``).
    case transferConditions
    /// The set of held sockets (``EventLoop/urgent``) has something ready.
    case urgent
    /// The service manager's notify socket has room for the messages held back.
    case serviceNotifier
}

/// The epoll set and what each registration stands for. Every registration gets a token
/// that is never reused, so an event for a registration removed earlier in the same batch
/// is recognised and dropped.
///
/// Held sockets are in a second epoll set, `urgent`, itself in the main one: their
/// readiness (a call coming in for a suspended app) can be taken on its own, at the start
/// of a turn and between two control requests, so a flood of requests on the control
/// socket does not queue a wake behind it.
final class EventLoop {
    let epoll: Epoll
    let urgent: Epoll
    private var sources: [UInt64: EventSource] = [:]
    private var urgentTokens: Set<UInt64> = []
    /// The next registration's token; every token below it has been given.
    private(set) var nextToken: UInt64 = 1

    /// The held sockets' set as an in-place upgrade carries it: the old program's `urgent`
    /// set with its registrations, and where its tokens stopped.
    struct Carried: Codable {
        var urgentSet: CInt
        var nextToken: UInt64
    }

    /// A new loop, or with `carried`, one that goes on with the held sockets' set of the
    /// program before an in-place upgrade: they stay registered as they were (no
    /// `epoll_ctl` for each, and nothing that arrived during the exec is lost), and are
    /// claimed by ``adoptHeldSocket(token:id:)``.
    init(carrying carried: Carried? = nil) throws {
        epoll = try Epoll()
        if let carried {
            let descriptor = FileDescriptor(adopting: carried.urgentSet)
            try descriptor.setCloseOnExec()
            urgent = Epoll(adopting: descriptor, maxEventsPerWait: 64)
            nextToken = carried.nextToken
        } else {
            urgent = try Epoll(maxEventsPerWait: 64)
        }
        _ = try register(urgent.descriptor, .readable, .urgent)
    }

    /// Makes room for `count` more registrations at once (an upgrade's held sockets).
    func reserveCapacity(registrations count: Int) {
        sources.reserveCapacity(sources.count + count)
        urgentTokens.reserveCapacity(urgentTokens.count + count)
    }

    /// Claims a held socket's registration in a carried set under the token the old program
    /// gave it. A token that was never given, or is claimed already, is refused.
    func adoptHeldSocket(token: UInt64, id: UInt64) throws(CarriedRegistrationError) {
        guard token < nextToken, sources[token] == nil else { throw CarriedRegistrationError(token: token) }
        sources[token] = .heldSocket(id)
        urgentTokens.insert(token)
    }

    func register(_ fd: borrowing FileDescriptor, _ events: EpollEvents, _ source: EventSource) throws(Errno) -> UInt64 {
        let token = nextToken
        nextToken += 1
        if case .heldSocket = source {
            try urgent.add(fd, events: events, token: token)
            urgentTokens.insert(token)
        } else {
            try epoll.add(fd, events: events, token: token)
        }
        sources[token] = source
        return token
    }

    func modify(_ fd: borrowing FileDescriptor, _ events: EpollEvents, token: UInt64) throws(Errno) {
        if urgentTokens.contains(token) {
            try urgent.modify(fd, events: events, token: token)
        } else {
            try epoll.modify(fd, events: events, token: token)
        }
    }

    /// Removes a registration; the descriptor itself is closed by its owner afterwards. Every
    /// registration is removed once: failing to (ENOENT) is a bug in this bookkeeping.
    func deregister(_ fd: borrowing FileDescriptor, token: UInt64) {
        sources[token] = nil
        do {
            if urgentTokens.remove(token) != nil {
                try urgent.remove(fd)
            } else {
                try epoll.remove(fd)
            }
        } catch {
            preconditionFailure("\(error): registration \(token) was removed already")
        }
    }

    func source(for token: UInt64) -> EventSource? { sources[token] }

    /// Takes what is ready in the urgent set now, without waiting (`epoll_wait` with 0).
    func takeUrgent(_ body: (EventSource, EpollEvents) -> Void) {
        urgent.wait(timeoutMilliseconds: 0) { readiness in
            if let source = sources[readiness.token] { body(source, readiness.events) }
        }
    }
}

/// A carried registration's token that the old program cannot have given.
struct CarriedRegistrationError: Error, CustomStringConvertible {
    var token: UInt64
    var description: String { "the held sockets' set carried over names registration \(token) twice or out of range" }
}
