import Foundation
import Glibc
import SIP
import VoipdSystem

/// Something the embedded registrar saw or did, with the wall-clock time it happened and,
/// for an INVITE it sent, the state of the watched process at that moment.
struct TrafficRecord {
    let time: Double
    let event: SIPTrafficEvent
    /// For a forwarded INVITE: the kernel's state letter of the softphone (T: stopped).
    let watchedProcessState: Character?
}

/// The embedded registrar's observer, brought to the demo's thread: the registrar's thread
/// queues each event under a lock and writes a byte to a pipe, which wakes the demo's poll.
final class RegistrarTap: EventSource, @unchecked Sendable {
    // `queued` and `watchedPID` are shared with the registrar's thread, under `lock`.
    private let lock = NSLock()
    private var queued: [TrafficRecord] = []
    private var watchedPID: pid_t = 0
    private let wake: DescriptorPair
    /// Everything seen so far (the demo's thread only).
    private(set) var records: [TrafficRecord] = []

    init() throws {
        wake = try makePipe()
        try wake.first.setNonBlocking()
        try wake.second.setNonBlocking()
    }

    /// The observer to give the registrar. It never blocks: a full pipe already means "look".
    var observer: SIPRegistrar.Observer {
        { [self] event in record(event) }
    }

    /// The process whose state is noted when an INVITE is sent (the softphone).
    func watch(_ pid: pid_t) {
        lock.withLock { watchedPID = pid }
    }

    var descriptors: [Int32] { [wake.first.rawValue] }

    func service(_ fd: Int32) throws {
        _ = try? wake.first.read(upTo: 4096)
        records += lock.withLock {
            defer { queued.removeAll() }
            return queued
        }
    }

    /// The connections on which `method` was received from a peer, in order.
    func connections(receiving method: SIPMethod) -> [Int] {
        records.compactMap { record in
            if case .received(let message) = record.event.kind, message.method == method { record.event.connection } else { nil }
        }
    }

    /// The records of messages sent with `method` (requests) at or after `time`.
    func sent(_ method: SIPMethod, since time: Double) -> [TrafficRecord] {
        records.filter { record in
            if case .sent(let message) = record.event.kind { record.time >= time && message.method == method } else { false }
        }
    }

    /// Whether `connection` closed.
    func closed(_ connection: Int) -> Bool {
        records.contains { record in
            if case .connectionClosed = record.event.kind { record.event.connection == connection } else { false }
        }
    }

    private func record(_ event: SIPTrafficEvent) {
        let time = WallClock.now
        var state: Character?
        if case .sent(let message) = event.kind, message.method == .invite {
            let pid = lock.withLock { watchedPID }
            if pid > 0 { state = ProcFS.state(of: pid) }
        }
        lock.withLock { queued.append(TrafficRecord(time: time, event: event, watchedProcessState: state)) }
        var byte: UInt8 = 1
        _ = write(wake.second.rawValue, &byte, 1)
    }
}
