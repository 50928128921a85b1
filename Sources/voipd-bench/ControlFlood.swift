import Foundation
import VoipClient
import VoipdSystem

/// Threads that ask voipd for the status of every app as fast as it answers, each on its
/// own connection, while the wakes are timed: how much a busy control socket delays a wake.
final class ControlFlood: @unchecked Sendable {
    private let lock = NSLock()
    private var stopping = false
    private var requests = 0
    private var failure: String?
    private let finished = DispatchGroup()
    private let started = MonotonicInstant.now.nanoseconds

    init(socketPath: String, threads: Int) {
        for _ in 0..<threads {
            finished.enter()
            let thread = Thread { [self] in
                defer { finished.leave() }
                do {
                    let control = try VoipdControl(socketPath: socketPath)
                    while !isStopping {
                        _ = try control.status()
                        count()
                    }
                } catch {
                    record("\(error)")
                }
            }
            thread.start()
        }
    }

    private var isStopping: Bool { lock.withLock { stopping } }
    private func count() { lock.withLock { requests += 1 } }
    private func record(_ message: String) { lock.withLock { failure = failure ?? message } }

    /// Stops the threads and returns how many status requests per second voipd answered.
    func stop() throws -> Double {
        lock.withLock { stopping = true }
        finished.wait()
        let seconds = Double(MonotonicInstant.now.nanoseconds - started) / 1e9
        return try lock.withLock {
            if let failure { throw BenchError("the control flood stopped: \(failure)") }
            return Double(requests) / seconds
        }
    }
}
