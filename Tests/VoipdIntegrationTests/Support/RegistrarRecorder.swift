import Foundation
import Glibc
import SIP
import VoipdSystem

/// Everything an in-process ``SIPRegistrar`` saw and did, recorded from its thread, for a
/// test to wait on (with a deadline) and inspect. When the registrar sends an INVITE, the
/// kernel state of the watched process (the softphone) is read right then, before the
/// bytes leave: the proof that it was stopped when the INVITE was sent.
final class RegistrarRecorder: @unchecked Sendable {
    struct Entry {
        let event: SIPTrafficEvent
        /// For an INVITE sent: the watched process's state letter at that moment.
        let watchedState: Character?

        var message: SIPMessage? {
            switch event.kind {
            case .received(let message), .sent(let message): message
            default: nil
            }
        }

        var isSent: Bool { if case .sent = event.kind { true } else { false } }
        var isReceived: Bool { if case .received = event.kind { true } else { false } }
    }

    // Both guarded by `condition`.
    private let condition = NSCondition()
    private var entries: [Entry] = []
    private var watchedPID: pid_t = 0

    /// The observer to give the registrar.
    var observer: SIPRegistrar.Observer {
        { [self] event in record(event) }
    }

    /// Reads this process's state whenever an INVITE is sent.
    func watch(_ pid: pid_t) {
        condition.lock()
        watchedPID = pid
        condition.unlock()
    }

    var all: [Entry] {
        condition.lock()
        defer { condition.unlock() }
        return entries
    }

    /// The first entry matching `predicate`, waiting for it at most `timeout`.
    @discardableResult
    func waitFor(_ what: String, timeout: Duration = .seconds(20), _ predicate: (Entry) -> Bool) throws -> Entry {
        var found: Entry?
        try waitUntil(what, timeout: timeout) { entries in
            found = entries.first(where: predicate)
            return found != nil
        }
        return found!
    }

    /// Waits at most `timeout` until `condition` holds for the entries so far. The condition
    /// runs under the recorder's lock: it must look only at what it is given.
    func waitUntil(_ what: String, timeout: Duration = .seconds(20), _ condition: ([Entry]) -> Bool) throws {
        let deadline = Date(timeIntervalSinceNow: Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        self.condition.lock()
        defer { self.condition.unlock() }
        while !condition(entries) {
            guard self.condition.wait(until: deadline) else {
                throw TimedOut(description: "the registrar never saw \(what); it saw:\n\(entries.map(Self.describe).joined(separator: "\n"))")
            }
        }
    }

    /// Requests with `method` received, in order.
    func received(_ method: SIPMethod) -> [Entry] { all.filter { $0.isReceived && $0.message?.method == method } }

    /// Messages sent on `connection`, in order.
    func sent(on connection: Int) -> [Entry] { all.filter { $0.isSent && $0.event.connection == connection } }

    /// Whether `connection` closed.
    func closed(_ connection: Int) -> Bool {
        all.contains { if case .connectionClosed = $0.event.kind { $0.event.connection == connection } else { false } }
    }

    private func record(_ event: SIPTrafficEvent) {
        condition.lock()
        defer { condition.unlock() }
        var state: Character?
        if case .sent(let message) = event.kind, message.method == .invite, watchedPID > 0 {
            state = ProcFS.state(of: watchedPID)
        }
        entries.append(Entry(event: event, watchedState: state))
        condition.broadcast()
    }

    private static func describe(_ entry: Entry) -> String {
        let what: String
        switch entry.event.kind {
        case .connectionOpened: what = "opened"
        case .connectionClosed(let reason): what = "closed: \(reason)"
        case .received(let message): what = "received \(message.summary)"
        case .sent(let message): what = "sent \(message.summary)"
        case .note(let text): what = "note: \(text)"
        }
        return "  #\(entry.event.connection) \(entry.event.peer): \(what)"
    }
}
