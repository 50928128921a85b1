/// What identifies the version of a resource whose first bytes a partial file holds, so
/// that a later request can ask for the rest of that same version (`If-Range`, RFC 9110
/// §13.1.5). A weak entity tag cannot: `If-Range` needs a strong validator.
public enum ResumeValidator: Codable, Hashable, Sendable {
    case entityTag(String)
    case lastModified(String)

    /// The value of `If-Range`.
    public var headerValue: String {
        switch self {
        case .entityTag(let tag): return tag
        case .lastModified(let date): return date
        }
    }
}

/// Downloads resume with a Range request validated by `If-Range` when the server allows it;
/// otherwise they restart (issue 11, and URLSession's resume data). Uploads always restart
/// (seed 003: "there is no automatic support for resuming uploads").
public enum RangeResumption {
    /// What a later attempt can resume from, judged from a response: the server serves byte
    /// ranges (`Accept-Ranges: bytes`), the body is not re-encoded on the way (ranges count
    /// encoded bytes), and there is a strong validator (an entity tag, else `Last-Modified`).
    public static func validator(for response: HTTPResponseHead) -> ResumeValidator? {
        guard response.status == 200 || response.status == 206 else { return nil }
        let acceptsRanges = response.headers["Accept-Ranges"]?.lowercased().contains("bytes") ?? false
        guard acceptsRanges || response.status == 206 else { return nil }
        if let encoding = response.headers["Content-Encoding"]?.lowercased(), encoding != "identity" { return nil }
        if let tag = response.headers["ETag"]?.trimmingSpaces, !tag.isEmpty, !tag.hasPrefix("W/") {
            return .entityTag(tag)
        }
        if let date = response.headers["Last-Modified"]?.trimmingSpaces, !date.isEmpty {
            return .lastModified(date)
        }
        return nil
    }

    /// The headers that ask for the bytes after the `offset` already held.
    public static func requestHeaders(offset: Int64, validator: ResumeValidator) -> [HTTPHeader] {
        [HTTPHeader("Range", "bytes=\(offset)-"), HTTPHeader("If-Range", validator.headerValue)]
    }

    /// What to do with a response to a request that asked for the bytes from `offset` on
    /// (0: a request without a range).
    public enum Decision: Equatable, Sendable {
        /// Append the body to the partial file, which ends at `offset`; the whole resource
        /// is `total` bytes when known.
        case append(total: Int64?)
        /// The body is the whole resource: start the partial file again.
        case restart(total: Int64?)
        /// A partial response that does not continue the file: discard the partial file and
        /// try again without a range.
        case mismatch
    }

    public static func decide(_ response: HTTPResponseHead, requestedOffset: Int64) -> Decision {
        let length = response.headers["Content-Length"].flatMap { Int64($0.trimmingSpaces) }
        guard response.status == 206 else { return .restart(total: length) }
        guard requestedOffset > 0, let header = response.headers["Content-Range"], let range = ContentRange(header),
              range.first == requestedOffset else { return .mismatch }
        return .append(total: range.completeLength)
    }
}

/// A `Content-Range: bytes first-last/complete` value (`complete` may be `*`).
public struct ContentRange: Hashable, Sendable {
    public var first: Int64
    public var last: Int64
    public var completeLength: Int64?

    public init?(_ value: String) {
        let text = value.trimmingSpaces
        guard text.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = text.dropFirst(6)
        let halves = spec.split(separator: "/", maxSplits: 1)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", maxSplits: 1)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first >= 0, last >= first else { return nil }
        self.first = first
        self.last = last
        if halves[1] == "*" {
            completeLength = nil
        } else {
            guard let complete = Int64(halves[1]), complete > last else { return nil }
            completeLength = complete
        }
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
