/// An error reply: a stable code for programs and a message for people.
public struct ProtocolError: Error, Codable, Equatable, Sendable, CustomStringConvertible {
    /// Stable error codes; docs/PROTOCOL.md says when each is sent.
    public enum Code: String, Codable, Sendable, CaseIterable {
        // Framing: the connection is closed after the reply.
        case truncatedFrame, frameTooLarge, unknownType, unsupportedVersion
        case tooManyDescriptors, descriptorMismatch, badRequest
        // Requests.
        case notIdentified, alreadyIdentified, nameInUse, invalidName
        case notASocket, listeningSocket, notConnected, duplicateName, quotaExceeded
        case noSuchApp, noSuchSocket, permissionDenied, invalidState, launchFailed
        case internalError
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Framing errors leave the byte stream in doubt; the daemon closes the connection.
    public var closesConnection: Bool {
        switch code {
        case .truncatedFrame, .frameTooLarge, .unknownType, .unsupportedVersion, .tooManyDescriptors, .descriptorMismatch, .badRequest:
            return true
        default:
            return false
        }
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
