#if canImport(Glibc)
import Glibc
#endif
import Foundation
import VoipdSystem

/// An embedded SIP registrar and proxy on TCP and UDP (the same port), for tests and demos
/// that cannot rely on Kamailio: it behaves like Kamailio with `Deploy/kamailio/kamailio.cfg`.
///
/// A user is reached only over the flow its REGISTER came on: its TCP connection (a binding
/// dies with it) or, over UDP, the address the REGISTER came from. INVITEs for unknown users
/// get 404. Over UDP, requests and final responses are retransmitted as RFC 3261 17 says
/// (``SIPTransactions``). The registrar runs on its own thread with a poll() loop between
/// ``start()`` and ``stop()``.
///
/// ```swift
/// let registrar = try SIPRegistrar { event in print(event.time, event.kind) }
/// try registrar.start()
/// // … point user agents at 127.0.0.1:\(registrar.port) …
/// registrar.stop()
/// ```
public final class SIPRegistrar: @unchecked Sendable {
    /// Called on the registrar's thread for every connection opened or closed and every
    /// message received or sent. It must not block.
    public typealias Observer = @Sendable (SIPTrafficEvent) -> Void

    /// The address it listens on.
    public let host: String
    /// The port it listens on (the ephemeral one chosen when 0 was asked for).
    public let port: UInt16

    // The loop and thread handles change only in start()/stop(), under the lock.
    private let lock = NSLock()
    private var loop: SIPRegistrarLoop?
    private var thread: JoinableThread?

    /// Listens on TCP and binds UDP at `host:port` (0 for an ephemeral port, the same for
    /// both); call ``start()`` to serve. Registrations last at most `maximumExpires` seconds
    /// (Kamailio's `max_expires`); the transaction timers derive from `timers`.
    public init(
        host: String = "127.0.0.1", port: UInt16 = 0, maximumMessageSize: Int = 65_535, maximumExpires: Int = 3600,
        timers: SIPTimerValues = .standard, observer: Observer? = nil
    ) throws(SIPSocketError) {
        let loop = try SIPRegistrarLoop(
            host: host, port: port, maximumMessageSize: maximumMessageSize, maximumExpires: maximumExpires, timers: timers,
            observer: observer)
        self.host = host
        self.port = loop.port
        self.loop = loop
    }

    deinit { stop() }

    /// Starts the registrar's thread. Does nothing if already started or stopped.
    public func start() throws(SIPSocketError) {
        lock.lock()
        defer { lock.unlock() }
        guard thread == nil, let loop else { return }
        thread = try JoinableThread { loop.run() }
    }

    /// Stops the thread, waits for it, and closes every connection, the listener and the UDP
    /// socket.
    /// Idempotent.
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard let loop else { return }
        if let thread {
            do {
                try loop.wakeWriter.writeAll(CollectionOfOne(UInt8(1)))
            } catch {
                // A pipe of its own with room for the byte: anything else is a bug.
                preconditionFailure("the registrar's wake pipe: \(error)")
            }
            thread.join()
        }
        loop.closeAll()
        self.loop = nil
        self.thread = nil
    }
}
