import Dispatch
import Glibc
import VoipdVocabulary

/// The app's lifecycle events as an async sequence:
///
///     for try await event in application.events {
///         switch event.kind { … }
///     }   // each event is acknowledged when the loop asks for the next one
///
/// An event counts as handled, and is acknowledged, when the loop asks for the next one (or
/// earlier, with ``VoIPApplication/acknowledge(_:)``). Keep-alive and expiration handlers
/// registered with the application run before their event is returned; the delegate is not
/// called for events (the loop is the handler), only for a lost and a restored connection.
/// The sequence ends when voipd closes the connection and the application does not
/// reconnect (``ReconnectionPolicy/isEnabled``).
public struct LifecycleEvents: AsyncSequence {
    public typealias Element = LifecycleEvent
    let application: VoIPApplication

    public func makeAsyncIterator() -> Iterator { Iterator(application: application) }

    public struct Iterator: AsyncIteratorProtocol {
        let application: VoIPApplication
        private var unacknowledged: UInt64?

        init(application: VoIPApplication) { self.application = application }

        public mutating func next() async throws -> LifecycleEvent? {
            if let id = unacknowledged {
                unacknowledged = nil
                try application.acknowledge(eventID: id)
            }
            while true {
                let event: LifecycleEvent?
                do {
                    event = try application.nextEvent(timeoutMilliseconds: 0)
                } catch VoipdError.disconnected {
                    return nil
                }
                if let event {
                    application.runHandlers(for: event)
                    unacknowledged = event.id
                    return event
                }
                await readable(application.fileDescriptor)
            }
        }
    }
}

extension VoIPApplication {
    /// The lifecycle events, as an async sequence (see ``LifecycleEvents``).
    public var events: LifecycleEvents { LifecycleEvents(application: self) }
}

/// Suspends until `fd` is readable, without holding a thread.
private func readable(_ fd: CInt) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: .global())
        source.setEventHandler {
            source.cancel()
        }
        source.setCancelHandler {
            continuation.resume()
        }
        source.resume()
    }
}
