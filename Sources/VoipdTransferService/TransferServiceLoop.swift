import FoundationEssentials
import Glibc
import VoipdSystem
import VoipdTransfers
import VoipdVocabulary

/// A small single-threaded host for the transfer service alone: an epoll set, one
/// timerfd, and lists of what the service handed out. For tests and benchmarks; voipd hosts
/// the service in its own loop instead.
public final class TransferServiceLoop: TransferServiceHost {
    private let epoll: Epoll
    private let timer: TimerFd
    private static let timerToken: UInt64 = 1
    private var watched: [CInt: UInt64] = [:]
    public private(set) var service: TransferService!
    /// Every delivery, in order.
    public private(set) var deliveries: [TransferDelivery] = []
    public private(set) var progressEvents: [(app: String, event: TransferEvent)] = []
    public private(set) var logLines: [String] = []
    /// Called on each delivery (after it is recorded), e.g. to acknowledge it.
    public var onDelivery: ((TransferDelivery) -> Void)?

    public init(configuration: TransferConfiguration, store: TransferStore, launcher: TransferAgentLauncher) throws {
        epoll = try Epoll()
        timer = try TimerFd()
        try epoll.add(timer.descriptor, events: .readable, token: Self.timerToken)
        service = try TransferService(configuration: configuration, store: store, launcher: launcher, host: self)
        try armTimer()
    }

    /// Feeds an input and returns the reply.
    @discardableResult
    public func handle(_ input: TransferInput) -> TransferReply? {
        let reply = service.handle(input)
        try? armTimer()
        return reply
    }

    /// Runs until `done` says so or `timeout` passes; false on the timeout.
    public func run(timeout: Double, until done: () -> Bool) throws -> Bool {
        let end = MonotonicInstant.now + .seconds(timeout)
        while !done() {
            guard MonotonicInstant.now < end else { return false }
            try epoll.wait(timeoutMilliseconds: pollTimeout(until: end, limit: .seconds(1))) { ready in
                if ready.token == Self.timerToken {
                    _ = try timer.acknowledge()
                    service.timerFired()
                } else {
                    service.descriptorReady(token: ready.token, events: ready.events)
                }
            }
            try armTimer()
        }
        return true
    }

    private func armTimer() throws {
        guard let deadline = service?.nextDeadline else { return try timer.disarm() }
        let delay = max(0, deadline.timeIntervalSince(Date()))
        try timer.arm(at: .now + .seconds(delay))
    }

    // MARK: - TransferServiceHost

    public func watch(_ descriptor: borrowing FileDescriptor, events: EpollEvents, token: UInt64) {
        do {
            if watched[descriptor.rawValue] == nil {
                try epoll.add(descriptor, events: events, token: token)
            } else {
                try epoll.modify(descriptor, events: events, token: token)
            }
            watched[descriptor.rawValue] = token
        } catch {
            logLines.append("epoll: \(error)")
        }
    }

    public func unwatch(_ descriptor: borrowing FileDescriptor) {
        guard watched.removeValue(forKey: descriptor.rawValue) != nil else { return }
        do {
            try epoll.remove(descriptor)
        } catch {
            logLines.append("epoll: \(error)")
        }
    }

    public func deliver(_ delivery: TransferDelivery) {
        deliveries.append(delivery)
        onDelivery?(delivery)
    }

    public func progress(app: String, _ event: TransferEvent) {
        progressEvents.append((app, event))
    }

    public func log(_ message: String) {
        logLines.append(message)
    }
}
