/// The header fields of a SIP message, in order.
///
/// Names compare case-insensitively and compact forms (`v`, `f`, `t`, `i`, `m`, `l`, `k`, `c`)
/// are stored under their full names. Each field keeps its value as written, so a relayed
/// message keeps comma-joined and repeated header lines as the sender wrote them.
public struct SIPHeaders: Hashable, Sendable, Sequence {
    /// One header line.
    public struct Field: Hashable, Sendable {
        /// The name as written, or the full name for a compact form.
        public let name: String
        /// The value as written, without the blanks around it.
        public var value: String
        let key: String

        public init(name: String, value: String) {
            self.name = SIPHeaderName.expanded(name)
            self.value = value
            self.key = SIPHeaderName.key(name)
        }
    }

    /// Every line, in order.
    public private(set) var fields: [Field]

    /// Headers with these lines, in order.
    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields.map { Field(name: $0.name, value: $0.value) }
    }

    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// The value of the first line called `name`, as written.
    public subscript(name: String) -> String? {
        let key = SIPHeaderName.key(name)
        return fields.first { $0.key == key }?.value
    }

    /// Every line called `name`, as written.
    public func lines(_ name: String) -> [String] {
        let key = SIPHeaderName.key(name)
        return fields.filter { $0.key == key }.map(\.value)
    }

    /// Every value of `name`: repeated lines, and comma-joined values of list headers such as
    /// Via, Route, Record-Route and Contact, split apart.
    public func values(_ name: String) -> [String] {
        let key = SIPHeaderName.key(name)
        let lines = lines(name)
        guard SIPHeaderName.isList(key: key) else { return lines }
        return lines.flatMap { SIPSyntax.split($0, at: ",").map(String.init) }.filter { !$0.isEmpty }
    }

    /// Whether a line called `name` is present.
    public func contains(_ name: String) -> Bool { self[name] != nil }

    /// Appends a line.
    public mutating func add(_ name: String, _ value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Inserts a line before the first line called `name` (or at the end when there is none):
    /// how a proxy puts its Via and Record-Route on top.
    public mutating func addFirst(_ name: String, _ value: String) {
        let key = SIPHeaderName.key(name)
        let index = fields.firstIndex { $0.key == key } ?? fields.endIndex
        fields.insert(Field(name: name, value: value), at: index)
    }

    /// Replaces every line called `name` with one line holding `value`, where the first was.
    public mutating func set(_ name: String, _ value: String) {
        let key = SIPHeaderName.key(name)
        guard let index = fields.firstIndex(where: { $0.key == key }) else {
            add(name, value)
            return
        }
        fields[index].value = value
        fields = fields.enumerated().filter { $0.offset == index || $0.element.key != key }.map(\.element)
    }

    /// Removes every line called `name`.
    public mutating func remove(_ name: String) {
        let key = SIPHeaderName.key(name)
        fields.removeAll { $0.key == key }
    }

    /// Removes the first value of `name`, splitting a comma-joined first line if needed:
    /// how a proxy pops its Via from a response or its Route from a request.
    /// Returns the removed value.
    @discardableResult
    public mutating func removeFirstValue(_ name: String) -> String? {
        let key = SIPHeaderName.key(name)
        guard let index = fields.firstIndex(where: { $0.key == key }) else { return nil }
        var values = SIPHeaderName.isList(key: key) ? SIPSyntax.split(fields[index].value, at: ",") : [Substring(fields[index].value)]
        let removed = String(values.removeFirst())
        if values.isEmpty {
            fields.remove(at: index)
        } else {
            fields[index].value = values.joined(separator: ", ")
        }
        return removed
    }

    /// Copies every line called `name` from `other`, in order, to the end of these headers.
    public mutating func copy(_ name: String, from other: SIPHeaders) {
        let key = SIPHeaderName.key(name)
        fields.append(contentsOf: other.fields.filter { $0.key == key })
    }
}
