/// A `name-addr` or `addr-spec` header value with header parameters, as in From, To,
/// Contact, Route and Record-Route: `"Alice" <sip:alice@example.com>;tag=1928301774`.
public struct SIPNameAddress: Hashable, Sendable, CustomStringConvertible {
    /// The display name without quotes, if any.
    public var displayName: String?
    /// The address.
    public var uri: SIPURI
    /// Header parameters after the URI (`tag`, `expires`, …), not the URI's own parameters.
    public var parameters: SIPParameters

    public init(displayName: String? = nil, uri: SIPURI, parameters: SIPParameters = SIPParameters()) {
        self.displayName = displayName
        self.uri = uri
        self.parameters = parameters
    }

    /// Reads `"Name" <uri>;params`, `Name <uri>;params`, `<uri>;params` or `uri;params`.
    public init(parsing text: some StringProtocol) throws(SIPParseError) {
        let text = SIPSyntax.trimmed(Substring(text))
        let invalid = SIPParseError.invalidHeaderValue(name: "address", value: String(text))
        var displayName: String?
        var rest = text
        if rest.first == "\"" {
            guard let (name, after) = Self.quotedString(rest) else { throw invalid }
            displayName = name
            rest = SIPSyntax.trimmed(after)
            guard rest.first == "<" else { throw invalid }
        }
        let uriText: Substring
        let parameterText: Substring
        if let open = rest.firstIndex(of: "<") {
            if displayName == nil {
                let name = SIPSyntax.trimmed(rest[..<open])
                displayName = name.isEmpty ? nil : String(name)
            }
            guard let close = rest[open...].firstIndex(of: ">") else { throw invalid }
            uriText = rest[rest.index(after: open)..<close]
            parameterText = rest[rest.index(after: close)...]
        } else {
            // Without brackets the URI cannot carry parameters: they belong to the header.
            let semicolon = rest.firstIndex(of: ";") ?? rest.endIndex
            uriText = rest[..<semicolon]
            parameterText = rest[semicolon...]
        }
        let trailing = SIPSyntax.trimmed(parameterText)
        guard trailing.isEmpty || trailing.first == ";" else { throw invalid }
        self.init(
            displayName: displayName, uri: try SIPURI(parsing: uriText),
            parameters: try SIPParameters(parsing: trailing))
    }

    /// The `tag` parameter (From/To).
    public var tag: String? { parameters["tag"] }

    public var description: String {
        var text = ""
        if let displayName {
            let escaped = displayName.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"")
            text = "\"\(escaped)\" "
        }
        return text + "<\(uri)>" + parameters.description
    }

    /// Reads a quoted string at the start of `text`: its unescaped content and what follows.
    private static func quotedString(_ text: Substring) -> (String, Substring)? {
        var content = ""
        var index = text.index(after: text.startIndex)
        var escaped = false
        while index < text.endIndex {
            let character = text[index]
            if escaped {
                content.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                return (content, text[text.index(after: index)...])
            } else {
                content.append(character)
            }
            index = text.index(after: index)
        }
        return nil
    }
}
