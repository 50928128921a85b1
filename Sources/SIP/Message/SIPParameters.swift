/// An ordered list of `;name=value` parameters, as on URIs, Via and name-addr headers.
///
/// Names compare case-insensitively; values are kept exactly as written (quoted values keep
/// their quotes), so a message relayed through this module is not rewritten.
public struct SIPParameters: Hashable, Sendable, CustomStringConvertible {
    /// One `name` or `name=value` parameter.
    public struct Parameter: Hashable, Sendable {
        public var name: String
        public var value: String?

        public init(name: String, value: String?) {
            self.name = name
            self.value = value
        }
    }

    /// The parameters in order.
    public private(set) var items: [Parameter]

    public init(_ items: [Parameter] = []) { self.items = items }

    /// Reads parameters from text such as `;transport=tcp;lr` (the leading `;` is optional).
    public init(parsing text: some StringProtocol) throws(SIPParseError) {
        var items: [Parameter] = []
        var rest = SIPSyntax.trimmed(Substring(text))
        if rest.first == ";" { rest = rest.dropFirst() }
        guard !rest.isEmpty else {
            self.items = []
            return
        }
        for piece in SIPSyntax.split(rest, at: ";") {
            let parts = piece.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = SIPSyntax.trimmed(parts[0])
            guard SIPSyntax.isToken(name) else {
                throw .invalidHeaderValue(name: "parameter", value: String(text))
            }
            let value = parts.count > 1 ? String(SIPSyntax.trimmed(parts[1])) : nil
            items.append(Parameter(name: String(name), value: value))
        }
        self.items = items
    }

    /// The value of the first parameter called `name`; `""` for a parameter without a value,
    /// `nil` when the parameter is absent.
    public subscript(name: String) -> String? {
        guard let item = items.first(where: { $0.name.lowercased() == name.lowercased() }) else { return nil }
        return item.value ?? ""
    }

    /// Whether a parameter called `name` is present (with or without a value).
    public func contains(_ name: String) -> Bool { self[name] != nil }

    /// Replaces the value of the parameter called `name`, or appends it when absent.
    public mutating func set(_ name: String, _ value: String?) {
        if let index = items.firstIndex(where: { $0.name.lowercased() == name.lowercased() }) {
            items[index].value = value
        } else {
            items.append(Parameter(name: name, value: value))
        }
    }

    /// Removes every parameter called `name`.
    public mutating func remove(_ name: String) {
        items.removeAll { $0.name.lowercased() == name.lowercased() }
    }

    /// The parameters as written in a message: `;name=value;flag`.
    public var description: String {
        items.map { item in item.value.map { ";\(item.name)=\($0)" } ?? ";\(item.name)" }.joined()
    }
}
