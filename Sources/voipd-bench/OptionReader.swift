/// A mistake on a subcommand's command line, said with its usage; empty for `--help`, which
/// asks for the usage alone.
struct UsageError: Error, CustomStringConvertible {
    var description: String
}

/// A subcommand's command line, flag by flag, with typed values.
struct OptionReader {
    private var remaining: ArraySlice<String>

    init(_ arguments: [String]) { remaining = arguments[...] }

    /// Reads every flag of `arguments` into `options` with `apply`, which reads the flag's
    /// value, if it takes one, from the reader and returns false for a flag it does not
    /// know (a usage error). `-h` and `--help` ask for the usage.
    static func parse<Options>(_ arguments: [String], into options: Options,
                               _ apply: (_ flag: String, _ reader: inout OptionReader, _ options: inout Options) throws -> Bool) throws -> Options {
        var options = options
        var reader = OptionReader(arguments)
        while let flag = reader.remaining.popFirst() {
            if flag == "-h" || flag == "--help" { throw UsageError(description: "") }
            guard try apply(flag, &reader, &options) else { throw UsageError(description: "unknown argument \(flag)") }
        }
        return options
    }

    mutating func value(_ flag: String) throws -> String {
        guard let value = remaining.popFirst() else { throw UsageError(description: "\(flag) needs a value") }
        return value
    }

    mutating func integer(_ flag: String, in range: ClosedRange<Int>) throws -> Int {
        let text = try value(flag)
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(description: "\(flag) needs a number in \(range.lowerBound)…\(range.upperBound), not \(text)")
        }
        return number
    }

    /// A seed for the floors' random choices (their `-s`).
    mutating func seed(_ flag: String) throws -> UInt64 {
        let text = try value(flag)
        guard let seed = UInt64(text) else { throw UsageError(description: "\(flag) needs a number, not \(text)") }
        return seed
    }

    /// Comma-separated items, each read by `item` (nil: not allowed).
    mutating func list<Item>(_ flag: String, _ item: (String) -> Item?) throws -> [Item] {
        let text = try value(flag)
        let items = text.split(separator: ",").map { item(String($0)) }
        guard !items.isEmpty, items.allSatisfy({ $0 != nil }) else {
            throw UsageError(description: "\(flag): \(text) is not allowed (see --help)")
        }
        return items.map { $0! }
    }

    /// Comma-separated numbers, each in `range`.
    mutating func integers(_ flag: String, in range: ClosedRange<Int>) throws -> [Int] {
        try list(flag) { Int($0).flatMap { range.contains($0) ? $0 : nil } }
    }

    /// CPU placements by number (`CPUPlacement`'s raw values), each in `allowed`.
    mutating func placements(_ flag: String, allowed: Set<CPUPlacement> = Set(CPUPlacement.allCases)) throws -> [CPUPlacement] {
        try list(flag) { Int($0).flatMap(CPUPlacement.init(rawValue:)).flatMap { allowed.contains($0) ? $0 : nil } }
    }
}
