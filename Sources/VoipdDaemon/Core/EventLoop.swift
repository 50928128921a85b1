import Glibc
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
    /// The pidfd of a transfer agent killed for an upgrade, not yet ended (``EndingAgents``),
    /// by pid (a child's, held until reaped).
    case endingAgent(pid_t)
    /// The service manager's notify socket has room for the messages held back.
    case serviceNotifier
}

/// The epoll sets and what each registration stands for. Every registration gets a token
/// that is never reused, so an event for a registration removed earlier in the same batch
/// is recognised and dropped.
///
/// Held sockets and control connections are in the set the loop waits on, ``heldSet``;
/// everything else (the control socket, signals, timers, pidfds…) is in a second set,
/// ``others``, itself in the first. A wake (a call coming in for a suspended app) and a
/// request both come straight out of the wait, with no second `epoll_wait` before the app
/// is resumed or the request read: on one CPU the woken app runs only once voipd blocks
/// again, and a request's round trip is its system calls. Held sockets are served before
/// the rest of a batch, and can be looked at between two control requests
/// (``takeUrgent(_:)``), so a flood of requests on the control socket does not queue a
/// wake behind it.
final class EventLoop {
    /// The held sockets, the control connections, and ``others``: what the loop waits on.
    /// (Named for what an in-place upgrade carries in it: the held sockets alone, see
    /// ``setConnectionAside(_:token:)``.)
    private(set) var heldSet: Epoll
    /// Every registration that is neither a held socket nor a control connection.
    let others: Epoll
    // The loop's tables are looked at for every ready descriptor and registration, and not
    // checked for exclusive access at run time (`@exclusivity(unchecked)`; about 80
    // instructions a check): every access below is one look-up, insertion, removal or
    // append that calls nothing while it lasts (the batch is filled by `Epoll.wait`'s
    // callback, which touches nothing else of the loop), so none can overlap another.
    @exclusivity(unchecked) private var sources: [UInt64: EventSource] = [:]
    /// The registrations in ``heldSet`` (held sockets and connections).
    @exclusivity(unchecked) private var heldTokens: Set<UInt64> = []
    /// The control connections registered (in ``heldSet``): a look at the held sockets
    /// between two requests takes as many registrations as could be ready ahead of them.
    private var connections = 0
    /// The registration of ``others`` in ``heldSet``.
    private var othersToken: UInt64 = 0
    /// The next registration's token; every token below it has been given.
    private(set) var nextToken: UInt64 = 1

    /// The held sockets' set as an in-place upgrade carries it: the old program's
    /// ``heldSet`` with its registrations, and where its tokens stopped. (The old program's
    /// ``others`` in it goes as the exec closes it: the kernel drops a closed epoll set from
    /// every set it is in.)
    struct Carried: Codable {
        var urgentSet: CInt
        var nextToken: UInt64
    }

    /// A new loop, or with `carried`, one that goes on with the held sockets' set of the
    /// program before an in-place upgrade: they stay registered as they were (no
    /// `epoll_ctl` for each, and nothing that arrived during the exec is lost), and are
    /// claimed by ``adoptHeldSocket(token:id:)``.
    init(carrying carried: Carried? = nil) throws {
        others = try Epoll()
        if let carried {
            let descriptor = FileDescriptor(adopting: carried.urgentSet)
            try descriptor.setCloseOnExec()
            heldSet = Epoll(adopting: descriptor, maxEventsPerWait: 64)
            nextToken = carried.nextToken
        } else {
            heldSet = try Epoll(maxEventsPerWait: 64)
        }
        othersToken = nextToken
        nextToken += 1
        try heldSet.add(others.descriptor, events: .readable, token: othersToken)
    }

    /// Makes room for `count` more registrations at once (an upgrade's held sockets).
    func reserveCapacity(registrations count: Int) {
        sources.reserveCapacity(sources.count + count)
        heldTokens.reserveCapacity(heldTokens.count + count)
    }

    /// Claims a held socket's registration in a carried set under the token the old program
    /// gave it. A token that was never given, or is claimed already, is refused.
    func adoptHeldSocket(token: UInt64, id: UInt64) throws(CarriedRegistrationError) {
        guard token < nextToken, token != othersToken, sources[token] == nil else { throw CarriedRegistrationError(token: token) }
        sources[token] = .heldSocket(id)
        heldTokens.insert(token)
    }

    func register(_ fd: borrowing FileDescriptor, _ events: EpollEvents, _ source: EventSource) throws(Errno) -> UInt64 {
        let token = nextToken
        nextToken += 1
        switch source {
        case .heldSocket:
            try heldSet.add(fd, events: events, token: token)
            heldTokens.insert(token)
        case .client:
            try heldSet.add(fd, events: events, token: token)
            heldTokens.insert(token)
            connections += 1
            heldSet.reserveEvents(connections + heldSet.maxEventsPerWait)
        default:
            try others.add(fd, events: events, token: token)
        }
        sources[token] = source
        return token
    }

    func modify(_ fd: borrowing FileDescriptor, _ events: EpollEvents, token: UInt64) throws(Errno) {
        if heldTokens.contains(token) {
            try heldSet.modify(fd, events: events, token: token)
        } else {
            try others.modify(fd, events: events, token: token)
        }
    }

    /// Removes a registration; the descriptor itself is closed by its owner afterwards. Every
    /// registration is removed once: failing to (ENOENT) is a bug in this bookkeeping.
    func deregister(_ fd: borrowing FileDescriptor, token: UInt64) {
        if case .client = sources.removeValue(forKey: token) { connections -= 1 }
        do {
            if heldTokens.remove(token) != nil {
                try heldSet.remove(fd)
            } else {
                try others.remove(fd)
            }
        } catch {
            preconditionFailure("\(error): registration \(token) was removed already")
        }
    }

    /// For an in-place upgrade's exec: takes a control connection out of ``heldSet``, which
    /// the new program finds with its registrations as they are and claims as held sockets
    /// (a program restores the connections by registering them again, as older ones did when
    /// they were in ``others``, which the exec closes). Its token and source stay:
    /// ``putConnectionBack(_:_:token:)`` registers it again if the exec fails.
    func setConnectionAside(_ fd: borrowing FileDescriptor, token: UInt64) throws(Errno) {
        try heldSet.remove(fd)
    }

    /// A connection set aside for an exec that failed, registered again as it was.
    func putConnectionBack(_ fd: borrowing FileDescriptor, _ events: EpollEvents, token: UInt64) throws(Errno) {
        try heldSet.add(fd, events: events, token: token)
    }

    /// Takes the held sockets ready now, without waiting (`epoll_wait` on ``heldSet`` with
    /// 0; the other registrations' readiness is left for the loop's next turn). The kernel
    /// reports its ready list in order, and a socket that became ready is behind every
    /// connection ready before it: the look takes as many registrations as there are
    /// connections (and ``others``) besides the batch a wait takes, so that a held socket is
    /// reached as it was when the connections were not in this set.
    func takeUrgent(_ body: (EventSource, EpollEvents) -> Void) {
        heldSet.wait(timeoutMilliseconds: 0, maxEvents: connections + 1 + heldSet.maxEventsPerWait) { readiness in
            guard readiness.token != othersToken, let source = sources[readiness.token], case .heldSocket = source else { return }
            body(source, readiness.events)
        }
        urgentLooked = true
    }

    /// Whether the held sockets were looked at, and found quiet or served, since the last
    /// control request: by ``takeUrgent(_:)``, or by the loop's wait, whose batch serves
    /// them before anything else. The daemon serves a request only after such a look and
    /// clears this; the wait's look spares the one request after it a system call, unless
    /// the wait took as many as it may (``Epoll/maxEventsPerWait``): more may be ready then.
    var urgentLooked = false

    /// The registrations ready, kept between turns for their capacity.
    @exclusivity(unchecked) private var batch: [EpollReadiness] = []

    /// Waits (at most `timeoutMilliseconds`; -1: for ever), then calls `body` for each ready
    /// registration still registered when its turn comes (one removed earlier in the batch
    /// is dropped): the held sockets first, then the others. Returns whether anything was
    /// ready (false: the time ran out, or EINTR).
    @discardableResult
    func wait(timeoutMilliseconds: CInt = -1, _ body: (EventSource, EpollEvents) -> Void) -> Bool {
        batch.removeAll(keepingCapacity: true)
        var othersReady = false
        heldSet.wait(timeoutMilliseconds: timeoutMilliseconds) { readiness in
            if readiness.token == othersToken { othersReady = true } else { batch.append(readiness) }
        }
        // A full batch may have left held sockets ready (the kernel hands out the ready list
        // in order, so they come first in the next wait): the first request of this batch
        // looks at them before it is served, as any other does.
        urgentLooked = batch.count + (othersReady ? 1 : 0) < heldSet.maxEventsPerWait
        if othersReady { others.wait(timeoutMilliseconds: 0) { batch.append($0) } }
        if batch.count == 1 {
            // A request (or a wake) alone: nothing to put before it.
            if let source = sources[batch[0].token] { body(source, batch[0].events) }
        } else {
            // The held sockets first, then the rest in the kernel's order: each looked up
            // when its turn comes, since serving one may remove another.
            var rest = false
            for readiness in batch {
                guard let source = sources[readiness.token] else { continue }
                if case .heldSocket = source { body(source, readiness.events) } else { rest = true }
            }
            if rest {
                for readiness in batch {
                    guard let source = sources[readiness.token] else { continue }
                    if case .heldSocket = source { continue }
                    body(source, readiness.events)
                }
            }
        }
        return othersReady || !batch.isEmpty
    }
}

/// A carried registration's token that the old program cannot have given.
struct CarriedRegistrationError: Error, CustomStringConvertible {
    var token: UInt64
    var description: String { "the held sockets' set carried over names registration \(token) twice or out of range" }
}
