import FoundationEssentials

/// The checks on everything an app sends before it becomes a task. An app is hostile until
/// proven otherwise: sizes are bounded, the URL is http or https, paths are absolute and
/// plain, and the headers voipd itself manages cannot be set. Whether the app's uid may read
/// or write the file is the agent's check, made as that uid.
public enum TransferValidation {
    public static let maximumURLLength = 8192
    public static let maximumPathLength = 4000
    /// A partial file's name adds `.` and `.<task>.voipd-partial` to the destination's name.
    public static let maximumFileNameLength = 200
    public static let maximumHeaderCount = 64
    public static let maximumHeaderBytes = 32768
    public static let maximumIdentifierLength = 256

    /// Headers voipd sets itself (ranges for resumption, the body's framing) or that belong
    /// to the connection.
    public static let reservedHeaders: Set<String> = [
        "range", "if-range", "content-length", "transfer-encoding", "host", "connection",
        "keep-alive", "te", "trailer", "upgrade", "expect", "proxy-authorization", "proxy-connection",
    ]

    public static func validate(_ spec: TransferTaskSpec) throws(TransferRequestError) {
        try validate(spec.request)
        try validatePath(spec.kind.path, role: spec.kind.isDownload ? "destination" : "source")
        if case .download(let destination) = spec.kind {
            let name = destination.split(separator: "/").last.map(String.init) ?? ""
            guard name.utf8.count <= maximumFileNameLength else {
                throw TransferRequestError(.invalidPath, "the destination's file name is longer than \(maximumFileNameLength) bytes")
            }
        }
        guard spec.priority.isFinite, (0...1).contains(spec.priority) else {
            throw TransferRequestError(.invalidValue, "priority must be between 0 and 1, not \(spec.priority)")
        }
        if let value = spec.timeoutIntervalForResource { try validateInterval(value, "timeoutIntervalForResource") }
        if let value = spec.timeoutIntervalForRequest { try validateInterval(value, "timeoutIntervalForRequest") }
    }

    public static func validate(_ options: TransferOptions) throws(TransferRequestError) {
        try validateInterval(options.timeoutIntervalForResource, "timeoutIntervalForResource")
        try validateInterval(options.timeoutIntervalForRequest, "timeoutIntervalForRequest")
    }

    public static func validateSessionIdentifier(_ identifier: String) throws(TransferRequestError) {
        guard !identifier.isEmpty, identifier.utf8.count <= maximumIdentifierLength,
              !identifier.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw TransferRequestError(.invalidValue, "a session identifier is 1 to \(maximumIdentifierLength) bytes without control characters")
        }
    }

    public static func validate(_ request: TransferRequest) throws(TransferRequestError) {
        guard request.url.utf8.count <= maximumURLLength else {
            throw TransferRequestError(.invalidURL, "the URL is longer than \(maximumURLLength) bytes")
        }
        guard let components = URLComponents(string: request.url), let scheme = components.scheme?.lowercased() else {
            throw TransferRequestError(.invalidURL, "\"\(request.url.prefix(200))\" is not a URL")
        }
        guard scheme == "http" || scheme == "https" else {
            throw TransferRequestError(.unsupportedScheme, "only http and https URLs can be transferred, not \(scheme)")
        }
        guard let host = components.host, !host.isEmpty else {
            throw TransferRequestError(.invalidURL, "the URL has no host")
        }
        guard components.user == nil, components.password == nil else {
            throw TransferRequestError(.invalidURL, "the URL carries credentials: send an Authorization header or answer the challenge")
        }
        guard !request.method.isEmpty, request.method.utf8.count <= 32, request.method.utf8.allSatisfy(isTokenByte) else {
            throw TransferRequestError(.invalidMethod, "\"\(request.method.prefix(40))\" is not an HTTP method")
        }
        guard request.headers.count <= maximumHeaderCount else {
            throw TransferRequestError(.invalidHeader, "more than \(maximumHeaderCount) headers")
        }
        var total = 0
        for header in request.headers {
            guard !header.name.isEmpty, header.name.utf8.count <= 256, header.name.utf8.allSatisfy(isTokenByte) else {
                throw TransferRequestError(.invalidHeader, "\"\(header.name.prefix(40))\" is not a header name")
            }
            guard header.value.utf8.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7f) }) else {
                throw TransferRequestError(.invalidHeader, "the value of \(header.name) holds a control character")
            }
            guard !reservedHeaders.contains(header.name.lowercased()) else {
                throw TransferRequestError(.invalidHeader, "\(header.name) is set by voipd, not by the app")
            }
            total += header.name.utf8.count + header.value.utf8.count + 4
        }
        guard total <= maximumHeaderBytes else {
            throw TransferRequestError(.invalidHeader, "the headers take more than \(maximumHeaderBytes) bytes")
        }
    }

    /// An absolute path with no empty, `.` or `..` component: what it names is what it says.
    public static func validatePath(_ path: String, role: String) throws(TransferRequestError) {
        guard path.hasPrefix("/"), !path.hasSuffix("/"), path.utf8.count <= maximumPathLength, !path.utf8.contains(0) else {
            throw TransferRequestError(.invalidPath, "the \(role) must be an absolute path to a file, not \"\(path.prefix(200))\"")
        }
        let components = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        guard !components.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
            throw TransferRequestError(.invalidPath, "the \(role) \"\(path.prefix(200))\" has an empty, . or .. component")
        }
    }

    static func validateInterval(_ seconds: Double, _ name: String) throws(TransferRequestError) {
        guard seconds.isFinite, seconds > 0, seconds <= 365 * 24 * 3600 else {
            throw TransferRequestError(.invalidValue, "\(name) must be more than 0 and at most a year, not \(seconds)")
        }
    }

    /// RFC 9110's tchar.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): return true
        default: return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}
