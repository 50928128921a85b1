import CVoipd
import Glibc

/// Readiness flags of an epoll registration.
public struct EpollEvents: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let readable = EpollEvents(rawValue: voipd_EPOLLIN)
    public static let writable = EpollEvents(rawValue: voipd_EPOLLOUT)
    public static let readHangup = EpollEvents(rawValue: voipd_EPOLLRDHUP)
    public static let priority = EpollEvents(rawValue: voipd_EPOLLPRI)
    public static let error = EpollEvents(rawValue: voipd_EPOLLERR)
    public static let hangup = EpollEvents(rawValue: voipd_EPOLLHUP)
    public static let edgeTriggered = EpollEvents(rawValue: voipd_EPOLLET)
}

/// One ready registration returned by ``Epoll/wait(timeoutMilliseconds:)``.
public struct EpollReadiness: Sendable {
    /// The token given when the descriptor was registered.
    public var token: UInt64
    public var events: EpollEvents
}

/// An epoll instance (`epoll_create1(EPOLL_CLOEXEC)`). It does not own the descriptors
/// registered with it; each registration carries a 64-bit token so that an event for a
/// registration that has since been removed can be recognised and dropped.
public struct Epoll: ~Copyable {
    public let descriptor: FileDescriptor
    private var buffer: UnsafeMutableBufferPointer<epoll_event>
    /// The most registrations one ``wait(timeoutMilliseconds:maxEvents:_:)`` reports unless
    /// told otherwise (its `maxevents`).
    public let maxEventsPerWait: Int

    public init(maxEventsPerWait: Int = 256) throws(Errno) {
        descriptor = FileDescriptor(adopting: try valueOrErrno("epoll_create1") { epoll_create1(CInt(EPOLL_CLOEXEC)) })
        buffer = .allocate(capacity: maxEventsPerWait)
        self.maxEventsPerWait = maxEventsPerWait
    }

    /// An epoll instance this process already has (one carried across an exec), with its
    /// registrations as they are.
    public init(adopting descriptor: consuming FileDescriptor, maxEventsPerWait: Int = 256) {
        self.descriptor = descriptor
        buffer = .allocate(capacity: maxEventsPerWait)
        self.maxEventsPerWait = maxEventsPerWait
    }

    deinit { buffer.deallocate() }

    /// Room for a wait that reports up to `count` registrations at once.
    public mutating func reserveEvents(_ count: Int) {
        guard count > buffer.count else { return }
        let larger = UnsafeMutableBufferPointer<epoll_event>.allocate(capacity: max(count, 2 * buffer.count))
        buffer.deallocate()
        buffer = larger
    }

    /// `epoll_ctl(EPOLL_CTL_ADD)`.
    public func add(_ fd: borrowing FileDescriptor, events: EpollEvents, token: UInt64) throws(Errno) {
        try control(EPOLL_CTL_ADD, fd.rawValue, events, token, "epoll_ctl(ADD)")
    }

    /// `epoll_ctl(EPOLL_CTL_MOD)`.
    public func modify(_ fd: borrowing FileDescriptor, events: EpollEvents, token: UInt64) throws(Errno) {
        try control(EPOLL_CTL_MOD, fd.rawValue, events, token, "epoll_ctl(MOD)")
    }

    /// `epoll_ctl(EPOLL_CTL_DEL)`: ENOENT when the descriptor is not registered.
    public func remove(_ fd: borrowing FileDescriptor) throws(Errno) {
        _ = try valueOrErrno("epoll_ctl(DEL)") { epoll_ctl(descriptor.rawValue, EPOLL_CTL_DEL, fd.rawValue, nil) }
    }

    private func control(_ op: CInt, _ fd: CInt, _ events: EpollEvents, _ token: UInt64, _ name: StaticString) throws(Errno) {
        var event = epoll_event()
        event.events = events.rawValue
        event.data.u64 = token
        _ = try valueOrErrno("\(name)") { epoll_ctl(descriptor.rawValue, op, fd, &event) }
    }

    /// `epoll_wait`: blocks until something is ready (`-1` waits forever), then calls `body`
    /// for each ready registration, at most `maxEvents` of them (``maxEventsPerWait`` when
    /// nil; more than ``reserveEvents(_:)`` made room for is not asked for). An interruption
    /// (EINTR) is an empty batch rather than a retry, so that the caller's loop decides what
    /// comes next.
    public func wait<E: Error>(timeoutMilliseconds: CInt = -1, maxEvents: Int? = nil,
                               _ body: (EpollReadiness) throws(E) -> Void) throws(E) where E: Error {
        let n: CInt
        let most = CInt(min(maxEvents ?? maxEventsPerWait, buffer.count))
        do {
            n = try valueOrErrno("epoll_wait", retryOnInterrupt: false) {
                epoll_wait(descriptor.rawValue, buffer.baseAddress, most, timeoutMilliseconds)
            }
        } catch {
            // EINTR, or nothing the caller could act on: the loop comes round again.
            precondition(error == .interrupted, "\(error)")
            return
        }
        for i in 0..<Int(n) {
            try body(EpollReadiness(token: buffer[i].data.u64, events: EpollEvents(rawValue: buffer[i].events)))
        }
    }
}
