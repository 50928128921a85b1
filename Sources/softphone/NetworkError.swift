import VoipdSystem

/// A failed network operation, with what the system said.
struct NetworkError: Error, CustomStringConvertible {
    /// What was being done: `connect 127.0.0.1:5060`, `send`, …
    let operation: String
    let reason: String

    init(_ operation: String, reason: String) {
        self.operation = operation
        self.reason = reason
    }

    /// A system call's error: the call as the operation, the errno's text as the reason.
    init(_ error: Errno) {
        self.init(error.call, reason: Errno(error.rawValue).description)
    }

    var description: String { "\(operation): \(reason)" }
}
