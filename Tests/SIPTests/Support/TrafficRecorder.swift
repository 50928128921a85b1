import Foundation
import SIP
import VoipdTestSupport

/// Collects a SIPRegistrar's observer events (delivered on the registrar's thread) and lets
/// a test wait for one.
final class TrafficRecorder: @unchecked Sendable {
    // `events` is guarded by `condition`.
    private let condition = NSCondition()
    private var events: [SIPTrafficEvent] = []

    var observer: SIPRegistrar.Observer {
        { [self] event in
            condition.lock()
            events.append(event)
            condition.broadcast()
            condition.unlock()
        }
    }

    var recorded: [SIPTrafficEvent] {
        condition.lock()
        defer { condition.unlock() }
        return events
    }

    /// Waits until the events so far satisfy `condition`, or throws after `timeout`.
    func waitUntil(_ what: String, timeout: Duration = .seconds(5), _ satisfied: ([SIPTrafficEvent]) -> Bool) throws {
        let deadline = Date(timeIntervalSinceNow: Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        condition.lock()
        defer { condition.unlock() }
        while !satisfied(events) {
            guard condition.wait(until: deadline) else { throw TestFailure("timed out waiting for \(what)") }
        }
    }

    /// Waits until an event satisfies `predicate`, or throws after `timeout`.
    @discardableResult
    func waitFor(_ what: String, timeout: Duration = .seconds(5), _ predicate: (SIPTrafficEvent) -> Bool) throws -> SIPTrafficEvent {
        let deadline = Date(timeIntervalSinceNow: Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let event = events.first(where: predicate) { return event }
            guard condition.wait(until: deadline) else { throw TestFailure("timed out waiting for \(what)") }
        }
    }
}

extension TrafficRecorder {
    /// What the registrar sent (`matching`) after it took the first message matching
    /// `taken`, if anything within `window` of now: what a timer that `taken` stopped must not
    /// send. Its own record orders the two, so a retransmission it sent before, which a slow
    /// peer (under ThreadSanitizer, on a busy machine) reads only later, is no fault.
    func sent(after what: String, within window: Duration, taken: @escaping (SIPMessage) -> Bool,
              _ matching: @escaping (SIPMessage) -> Bool) throws -> SIPMessage? {
        let takenAt = { (events: [SIPTrafficEvent]) in
            events.firstIndex { if case .received(let message) = $0.kind { taken(message) } else { false } }
        }
        try waitUntil(what) { takenAt($0) != nil }
        var found: SIPMessage?
        do {
            try waitUntil("something sent after \(what)", timeout: window) { events in
                found = events[takenAt(events)!...].lazy.compactMap { event -> SIPMessage? in
                    if case .sent(let message) = event.kind, matching(message) { message } else { nil }
                }.first
                return found != nil
            }
        } catch is TestFailure {}
        return found
    }
}

extension SIPTrafficEvent {
    var isConnectionClosed: Bool {
        if case .connectionClosed = kind { true } else { false }
    }

    var message: SIPMessage? {
        switch kind {
        case .received(let message), .sent(let message): message
        default: nil
        }
    }
}

/// Runs `body` with an embedded registrar on 127.0.0.1 (transaction timers from `timers`)
/// whose traffic a recorder collects; the registrar stops when `body` returns.
func withRegistrar(timers: SIPTimerValues = .standard, _ body: (SIPRegistrar, TrafficRecorder) throws -> Void) throws {
    let recorder = TrafficRecorder()
    let registrar = try SIPRegistrar(timers: timers, observer: recorder.observer)
    try registrar.start()
    defer { registrar.stop() }
    try body(registrar, recorder)
}
