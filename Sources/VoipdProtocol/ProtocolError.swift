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
        /// The requesting uid is at one of its limits (apps, connections, held sockets).
        case userQuotaExceeded
        /// voipd itself is out of descriptors or memory: not the client's fault; try again later.
        case outOfResources
        case internalError
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Framing errors leave the client's state in doubt; the daemon closes the connection.
    /// A well-framed request with a bad body (`badRequest`) is only refused.
    public var closesConnection: Bool {
        switch code {
        case .truncatedFrame, .frameTooLarge, .unknownType, .unsupportedVersion, .tooManyDescriptors, .descriptorMismatch:
            return true
        default:
            return false
        }
    }

    public var description: String { "\(code.rawValue): \(message)" }

    private enum CodingKeys: String, CodingKey { case code, message }

    /// A code this side does not know (a newer peer) becomes `internalError`, with the
    /// original code kept in the message.
    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let raw = try container.decode(String.self, forKey: .code)
        let text = try container.decode(String.self, forKey: .message)
        if let known = Code(rawValue: raw) {
            self.init(known, text)
        } else {
            self.init(.internalError, "\(raw): \(text)")
        }
    }
}
