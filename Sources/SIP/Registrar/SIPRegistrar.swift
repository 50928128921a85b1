#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// An embedded SIP registrar and proxy on TCP, for tests and demos that cannot rely on
/// Kamailio: it behaves like Kamailio with `Deploy/kamailio/kamailio.cfg`.
///
/// A user is reached only over the connection its REGISTER came on; a binding dies with its
/// connection. INVITEs for unknown users get 404. The registrar runs on its own thread with
/// a poll() loop between ``start()`` and ``stop()``.
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

    /// Binds and listens on `host:port` (0 for an ephemeral port); call ``start()`` to serve.
    public init(
        host: String = "127.0.0.1", port: UInt16 = 0, maximumMessageSize: Int = 65_535, observer: Observer? = nil
    ) throws(SIPSocketError) {
        let loop = try SIPRegistrarLoop(host: host, port: port, maximumMessageSize: maximumMessageSize, observer: observer)
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

    /// Stops the thread, waits for it, and closes every connection and the listener.
    /// Idempotent.
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard let loop else { return }
        if let thread {
            var byte: UInt8 = 1
            _ = write(loop.wakeWriter, &byte, 1)
            thread.join()
        }
        loop.closeAll()
        self.loop = nil
        self.thread = nil
    }
}
