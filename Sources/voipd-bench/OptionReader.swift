/// A mistake on a subcommand's command line, said with its usage; empty for `--help`, which
/// asks for the usage alone.
struct UsageError: Error, CustomStringConvertible {
    var description: String
}

/// A subcommand's options: their defaults (`init()`), the usage, and how each flag is read.
protocol SubcommandOptions {
    init()
    /// What `--help` prints, and a usage error after its message.
    static var usage: String { get }
    /// Reads `flag` into the options, taking its value, if it has one, from `reader`; throws
    /// ``OptionReader/unknown(_:)`` for a flag the subcommand does not have.
    mutating func read(_ flag: String, from reader: inout OptionReader) throws
}

/// A subcommand's command line, flag by flag, with typed values.
struct OptionReader {
    private var remaining: ArraySlice<String>

    init(_ arguments: [String]) { remaining = arguments[...] }

    /// Reads every flag of `arguments` into the defaults of `Options`, each with the
    /// options' own ``SubcommandOptions/read(_:from:)``. `-h` and `--help` ask for the usage.
    static func parse<Options: SubcommandOptions>(_ arguments: [String]) throws -> Options {
        var options = Options()
        var reader = OptionReader(arguments)
        while let flag = reader.remaining.popFirst() {
            if flag == "-h" || flag == "--help" { throw UsageError(description: "") }
            try options.read(flag, from: &reader)
        }
        return options
    }

    /// The error for a flag the subcommand does not have.
    static func unknown(_ flag: String) -> UsageError { UsageError(description: "unknown argument \(flag)") }

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
