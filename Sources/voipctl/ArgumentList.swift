/// The command line, consumed option by option. Options are only looked for before `--`.
final class ArgumentList {
    var remaining: [String]

    init(_ arguments: [String]) { remaining = arguments }

    private var optionsEnd: Int { remaining.firstIndex(of: "--") ?? remaining.endIndex }

    /// Removes a flag; true if it was there.
    func flag(_ names: String...) -> Bool {
        for name in names {
            if let index = remaining[..<optionsEnd].firstIndex(of: name) {
                remaining.remove(at: index)
                return true
            }
        }
        return false
    }

    /// Removes an option and its value.
    func option(_ name: String, verb: String? = nil) throws -> String? {
        let end = optionsEnd
        guard let index = remaining[..<end].firstIndex(of: name) else { return nil }
        guard index + 1 < end else { throw UsageFailure(message: "\(name) needs a value", verb: verb) }
        let value = remaining[index + 1]
        remaining.removeSubrange(index...index + 1)
        return value
    }

    func repeatedOption(_ name: String, verb: String? = nil) throws -> [String] {
        var values: [String] = []
        while let value = try option(name, verb: verb) { values.append(value) }
        return values
    }
}
