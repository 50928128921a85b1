import FoundationEssentials

/// Bytes moved so far. Expected counts are nil while unknown (no Content-Length).
public struct TransferProgress: Codable, Hashable, Sendable {
    public var bytesSent: Int64
    public var bytesExpectedToSend: Int64?
    /// Bytes of the response body received, counting those kept from earlier attempts.
    public var bytesReceived: Int64
    public var bytesExpectedToReceive: Int64?

    public init(bytesSent: Int64 = 0, bytesExpectedToSend: Int64? = nil, bytesReceived: Int64 = 0, bytesExpectedToReceive: Int64? = nil) {
        self.bytesSent = bytesSent
        self.bytesExpectedToSend = bytesExpectedToSend
        self.bytesReceived = bytesReceived
        self.bytesExpectedToReceive = bytesExpectedToReceive
    }
}

/// A failure of the network (or of the agent carrying the transfer), as URLSession reports
/// it. Transient failures are retried until the resource timeout; the others end the task.
public struct NetworkFailure: Codable, Hashable, Sendable {
    /// `URLError.Code`'s raw value (NSURLErrorDomain), or 0 when voipd itself failed.
    public var code: Int
    public var message: String
    public var isTransient: Bool

    public init(code: Int, message: String, isTransient: Bool) {
        self.code = code
        self.message = message
        self.isTransient = isTransient
    }
}

/// Why a task did not succeed.
public enum TransferError: Codable, Hashable, Sendable, CustomStringConvertible {
    /// The network failed in a way retrying cannot fix (an untrusted certificate, too many
    /// redirects, a malformed response…).
    case network(NetworkFailure)
    /// The server answered with this status (not 2xx); the response is in the completion.
    case http(status: Int)
    /// `timeoutIntervalForResource` passed (URLSession: `NSURLErrorTimedOut`).
    case timedOut
    /// The app cancelled the task, or invalidated its session (`NSURLErrorCancelled`).
    case cancelled
    /// The file could not be read or written as the app's user.
    case file(String)

    public var description: String {
        switch self {
        case .network(let failure): return "network error \(failure.code): \(failure.message)"
        case .http(let status): return "HTTP status \(status)"
        case .timedOut: return "timed out (timeoutIntervalForResource)"
        case .cancelled: return "cancelled"
        case .file(let message): return "file error: \(message)"
        }
    }
}

/// How a task ended: the final response, if one came, and the error if it failed.
public struct TransferCompletion: Codable, Hashable, Sendable {
    public var response: HTTPResponseHead?
    public var error: TransferError?
    public var progress: TransferProgress

    public init(response: HTTPResponseHead? = nil, error: TransferError? = nil, progress: TransferProgress = TransferProgress()) {
        self.response = response
        self.error = error
        self.progress = progress
    }

    public var succeeded: Bool { error == nil }
}

/// A server's demand for credentials: a 401 with `WWW-Authenticate` (seed 003: "NSURLSession
/// will resume (or relaunch) your app and call the -URLSession:task:didReceiveChallenge:
/// completionHandler: delegate callback").
public struct AuthenticationChallenge: Codable, Hashable, Sendable {
    /// The first scheme offered ("Basic", "Digest", "Bearer"…).
    public var scheme: String
    public var realm: String?
    /// Challenges of this task already answered with a credential that failed.
    public var previousFailureCount: Int
    public var response: HTTPResponseHead

    public init(scheme: String, realm: String?, previousFailureCount: Int, response: HTTPResponseHead) {
        self.scheme = scheme
        self.realm = realm
        self.previousFailureCount = previousFailureCount
        self.response = response
    }

    /// The challenge a 401 response makes; nil when it has no `WWW-Authenticate`.
    public init?(response: HTTPResponseHead, previousFailureCount: Int) {
        guard response.isChallenge, let header = response.headers["WWW-Authenticate"] else { return nil }
        let trimmed = header.drop { $0 == " " }
        let scheme = String(trimmed.prefix { $0 != " " && $0 != "," })
        var realm: String?
        if let start = trimmed.indices.first(where: { trimmed[$0...].prefix(6).lowercased() == "realm=" }) {
            let rest = trimmed[start...].dropFirst(6)
            if rest.first == "\"" {
                realm = String(rest.dropFirst().prefix { $0 != "\"" })
            } else {
                realm = String(rest.prefix { $0 != "," && $0 != " " })
            }
        }
        self.init(scheme: scheme.isEmpty ? "unknown" : scheme, realm: realm, previousFailureCount: previousFailureCount, response: response)
    }
}

/// The app's answer to a challenge (`URLSession.AuthChallengeDisposition`).
public enum ChallengeAnswer: Codable, Hashable, Sendable {
    /// Try again with this user and password (sent as HTTP Basic). The task continues at once:
    /// a stalled task is not delayed by the resume rate limiter (seed 003).
    case useCredential(user: String, password: String)
    /// Cancel the task (it completes with ``TransferError/cancelled``).
    case cancel
    /// Take the 401 as the answer: the task completes with it, as an HTTP error.
    case performDefaultHandling
}

/// A credential held for a task: in memory only, never written to the store. After a
/// restart the server challenges again and the app answers again.
public struct TransferCredential: Hashable, Sendable {
    public var user: String
    public var password: String
}
