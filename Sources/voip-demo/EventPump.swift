import Glibc

/// Something the demo's poll loop watches: a pipe, a socket, voipd's event stream.
protocol EventSource: AnyObject {
    /// The descriptors to wait on now.
    var descriptors: [Int32] { get }
    /// Input already read and waiting in the process: the loop must not block.
    var hasBufferedInput: Bool { get }
    /// Takes what is there on `fd` (one of ``descriptors``).
    func service(_ fd: Int32) throws
}

extension EventSource {
    var hasBufferedInput: Bool { false }
}

/// The demo's only way of waiting: poll() over every source until a condition holds or a
/// deadline passes. No sleeps: each wait ends on an event, or fails with what it waited for.
final class EventPump {
    private(set) var sources: [EventSource] = []

    func add(_ source: EventSource) {
        sources.append(source)
    }

    func remove(_ source: EventSource) {
        sources.removeAll { $0 === source }
    }

    /// Handles events until `condition` holds; throws after `timeout`.
    func waitUntil(_ what: String, timeout: Duration, _ condition: () throws -> Bool) throws {
        let deadline = ContinuousClock.now + timeout
        while try !condition() {
            guard ContinuousClock.now < deadline else { throw DemoFailure("timed out after \(timeout) waiting until \(what)") }
            try pumpOnce(until: deadline)
        }
    }

    /// Handles events for `duration`, whatever they are.
    func run(for duration: Duration) throws {
        let end = ContinuousClock.now + duration
        while ContinuousClock.now < end { try pumpOnce(until: end) }
    }

    private func pumpOnce(until deadline: ContinuousClock.Instant) throws {
        let watched = sources.flatMap { source in source.descriptors.map { (source, $0) } }
        var descriptors = watched.map { pollfd(fd: $0.1, events: Int16(POLLIN), revents: 0) }
        let buffered = sources.contains { $0.hasBufferedInput }
        let ready = poll(&descriptors, nfds_t(descriptors.count), buffered ? 0 : milliseconds(until: deadline))
        if ready < 0 && errno != EINTR { throw DemoFailure("poll failed: \(String(cString: strerror(errno)))") }
        for ((source, fd), descriptor) in zip(watched, descriptors) where descriptor.revents != 0 || source.hasBufferedInput {
            try source.service(fd)
        }
    }

    private func milliseconds(until deadline: ContinuousClock.Instant) -> Int32 {
        let remaining = deadline - .now
        guard remaining > .zero else { return 0 }
        return Int32(clamping: Int64((remaining / .milliseconds(1)).rounded(.up)))
    }
}
