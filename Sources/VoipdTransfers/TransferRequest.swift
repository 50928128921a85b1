import FoundationEssentials

/// What is asked of the server: the URL (http or https), the method and the app's headers.
public struct TransferRequest: Codable, Hashable, Sendable {
    public var url: String
    public var method: String
    public var headers: HTTPHeaders

    public init(url: String, method: String = "GET", headers: HTTPHeaders = HTTPHeaders()) {
        self.url = url
        self.method = method
        self.headers = headers
    }

    /// The host the per-host limit counts, lowercased (the port is not part of it, as with
    /// `httpMaximumConnectionsPerHost`).
    public var host: String { URLComponents(string: url)?.host?.lowercased() ?? "" }
}

/// Where the bytes go or come from. Uploads are from a file only, as in iOS (seed 003:
/// "background sessions only allow you to upload from a file, not from memory or from a
/// stream").
public enum TransferKind: Codable, Hashable, Sendable {
    /// The response body is written to `destination` (an absolute path), first as a partial
    /// file beside it, renamed into place when complete.
    case download(destination: String)
    /// The body is streamed from `source` (an absolute path).
    case upload(source: String)

    public var isDownload: Bool { if case .download = self { return true } else { return false } }

    /// The file the task reads or writes.
    public var path: String {
        switch self {
        case .download(let destination): return destination
        case .upload(let source): return source
        }
    }
}

/// The options a task runs with. A session's configuration gives them to its tasks; a task
/// may override each (URLSession keeps them on the configuration only).
public struct TransferOptions: Codable, Hashable, Sendable {
    /// The task waits for good conditions: external power, an inexpensive network, budget
    /// left (seed 003: "tasks created from a session whose configuration has the
    /// 'discretionary' flag set").
    public var discretionary: Bool
    /// Whether the task may run on an expensive network (cellular, a hotspot).
    public var allowsExpensiveNetworkAccess: Bool
    /// The whole task must finish within this, retries included, or it fails with
    /// ``TransferError/timedOut`` (seed 003: "defaults to a very long value (7 days, IIRC)").
    public var timeoutIntervalForResource: Double
    /// An attempt that receives nothing for this long fails and is retried (URLSession's
    /// `timeoutIntervalForRequest`, 60 s).
    public var timeoutIntervalForRequest: Double

    public static let sevenDays: Double = 7 * 24 * 3600

    public init(discretionary: Bool = false, allowsExpensiveNetworkAccess: Bool = true,
                timeoutIntervalForResource: Double = sevenDays, timeoutIntervalForRequest: Double = 60) {
        self.discretionary = discretionary
        self.allowsExpensiveNetworkAccess = allowsExpensiveNetworkAccess
        self.timeoutIntervalForResource = timeoutIntervalForResource
        self.timeoutIntervalForRequest = timeoutIntervalForRequest
    }
}

/// A task as an app asks for it. Options left nil come from the session's configuration.
public struct TransferTaskSpec: Codable, Hashable, Sendable {
    public var kind: TransferKind
    public var request: TransferRequest
    /// 0…1, higher first (`URLSessionTask.priority`; 0.5 is `defaultPriority`).
    public var priority: Double
    public var discretionary: Bool?
    public var allowsExpensiveNetworkAccess: Bool?
    public var timeoutIntervalForResource: Double?
    public var timeoutIntervalForRequest: Double?

    public static let defaultPriority = 0.5

    public init(kind: TransferKind, request: TransferRequest, priority: Double = defaultPriority,
                discretionary: Bool? = nil, allowsExpensiveNetworkAccess: Bool? = nil,
                timeoutIntervalForResource: Double? = nil, timeoutIntervalForRequest: Double? = nil) {
        self.kind = kind
        self.request = request
        self.priority = priority
        self.discretionary = discretionary
        self.allowsExpensiveNetworkAccess = allowsExpensiveNetworkAccess
        self.timeoutIntervalForResource = timeoutIntervalForResource
        self.timeoutIntervalForRequest = timeoutIntervalForRequest
    }

    /// A download of `url` to `destination`.
    public static func download(_ url: String, to destination: String, priority: Double = defaultPriority,
                                headers: HTTPHeaders = HTTPHeaders()) -> TransferTaskSpec {
        TransferTaskSpec(kind: .download(destination: destination), request: TransferRequest(url: url, headers: headers), priority: priority)
    }

    /// An upload of the file `source` to `url` (PUT unless another method is given).
    public static func upload(_ source: String, to url: String, method: String = "PUT", priority: Double = defaultPriority,
                              headers: HTTPHeaders = HTTPHeaders()) -> TransferTaskSpec {
        TransferTaskSpec(kind: .upload(source: source), request: TransferRequest(url: url, method: method, headers: headers), priority: priority)
    }

    /// The options, with the session's filling what the spec leaves open.
    public func options(in session: TransferOptions) -> TransferOptions {
        TransferOptions(discretionary: discretionary ?? session.discretionary,
                        allowsExpensiveNetworkAccess: allowsExpensiveNetworkAccess ?? session.allowsExpensiveNetworkAccess,
                        timeoutIntervalForResource: timeoutIntervalForResource ?? session.timeoutIntervalForResource,
                        timeoutIntervalForRequest: timeoutIntervalForRequest ?? session.timeoutIntervalForRequest)
    }
}
