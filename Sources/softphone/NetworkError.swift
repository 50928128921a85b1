import Glibc

/// A failed network operation, with what the system said.
struct NetworkError: Error, CustomStringConvertible {
    /// What was being done: `connect 127.0.0.1:5060`, `send`, …
    let operation: String
    let reason: String

    init(_ operation: String, reason: String) {
        self.operation = operation
        self.reason = reason
    }

    /// The calling thread's errno as the reason.
    init(_ operation: String, errno code: Int32 = errno) {
        self.init(operation, reason: String(cString: strerror(code)))
    }

    var description: String { "\(operation): \(reason)" }
}
