/// Why a request about transfers was refused. Nothing was changed.
public struct TransferRequestError: Error, Codable, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Codable, Sendable {
        case invalidURL
        case unsupportedScheme
        case invalidMethod
        case invalidHeader
        case invalidPath
        case invalidValue
        case unknownSession
        case unknownTask
        case tooManySessions
        case tooManyTasks
        case invalidState
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
