/// Reason phrases for the status codes this module sends.
public enum SIPStatus {
    /// The usual reason phrase for `code`, or a generic one for its class.
    public static func reasonPhrase(for code: Int) -> String {
        if let phrase = phrases[code] { return phrase }
        switch code {
        case 100..<200: return "Session Progress"
        case 200..<300: return "OK"
        case 300..<400: return "Redirection"
        case 400..<500: return "Client Error"
        case 500..<600: return "Server Error"
        default: return "Global Failure"
        }
    }

    private static let phrases: [Int: String] = [
        100: "Trying", 180: "Ringing", 183: "Session Progress", 200: "OK",
        400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
        423: "Interval Too Brief", 480: "Temporarily Unavailable", 481: "Call/Transaction Does Not Exist",
        483: "Too Many Hops", 486: "Busy Here", 487: "Request Terminated", 488: "Not Acceptable Here",
        500: "Server Internal Error", 501: "Not Implemented", 503: "Service Unavailable", 603: "Decline",
    ]
}
