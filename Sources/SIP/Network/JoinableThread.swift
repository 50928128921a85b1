#if canImport(Glibc)
import Glibc
#endif

/// A POSIX thread that can be joined: `stop()` must not return while the loop still runs.
final class JoinableThread {
    private var handle: pthread_t

    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    init(_ run: @escaping @Sendable () -> Void) throws(SIPSocketError) {
        let body = Unmanaged.passRetained(Body(run)).toOpaque()
        var handle = pthread_t()
        let result = pthread_create(&handle, nil, { argument in
            guard let argument else { return nil }
            Unmanaged<Body>.fromOpaque(argument).takeRetainedValue().run()
            return nil
        }, body)
        guard result == 0 else {
            Unmanaged<Body>.fromOpaque(body).release()
            throw SIPSocketError("pthread_create", errno: result)
        }
        self.handle = handle
    }

    /// Waits for the thread to finish.
    func join() {
        pthread_join(handle, nil)
    }
}
