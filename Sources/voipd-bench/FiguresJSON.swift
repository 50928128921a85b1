import Foundation

/// Prints `figures` as one JSON object with sorted keys, or as `report` words them.
func printFigures<Figures: Encodable>(_ figures: Figures, json: Bool, report: (Figures) -> Void) throws {
    guard json else { return report(figures) }
    print(try encodeFigures(figures))
}

/// `figures` as one line of JSON with sorted keys.
///
/// Every `Double` in `figures` must be a ``Rounded`` (which turns what is not a number into
/// null): a bare non-finite `Double` is a programmer error here, not a figure.
func jsonLine(_ figures: some Encodable) -> String {
    do {
        return try encodeFigures(figures)
    } catch {
        preconditionFailure("figures that do not encode as JSON: \(error)")
    }
}

private func encodeFigures(_ figures: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(figures), as: UTF8.self)
}

/// A figure as the JSON lines give it: the value the report's text shows with `places`
/// decimals, or null when it is not a number (the median of no samples, a ratio to no floor).
struct Rounded: Encodable {
    var value: Double
    var places: Int

    init(_ value: Double, _ places: Int = 3) {
        self.value = value
        self.places = places
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        // Through the fixed text, so that the JSON and the line give the same number.
        if let rounded = Double(fixed(value, places)) {
            try container.encode(rounded)
        } else {
            try container.encodeNil()
        }
    }
}

extension Rounded {
    /// `bytes` in MiB, with one decimal.
    static func mebibytes(_ bytes: Double) -> Rounded { Rounded(bytes / 1_048_576, 1) }
}

/// A value written as null when absent, where a synthesized `Encodable` would leave the key
/// out.
struct OrNull<Value: Encodable>: Encodable {
    var value: Value?

    init(_ value: Value?) { self.value = value }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

/// One series' percentiles in µs, flat in a line under the series' name: `NAME_p50_us` and
/// `NAME_p99_us`, and with every run's figures `NAME_p50_us_runs` and `NAME_p99_us_runs`, as
/// every bench names them.
struct PercentileFigures: Encodable {
    var name: String
    var p50, p99: Rounded
    var runs: (p50: [Rounded], p99: [Rounded])?

    init(_ name: String, p50: Rounded, p99: Rounded, runs: (p50: [Rounded], p99: [Rounded])? = nil) {
        self.name = name
        self.p50 = p50
        self.p99 = p99
        self.runs = runs
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: FigureKey.self)
        try container.encode(p50, forKey: FigureKey(name + "_p50_us"))
        try container.encode(p99, forKey: FigureKey(name + "_p99_us"))
        if let runs {
            try container.encode(runs.p50, forKey: FigureKey(name + "_p50_us_runs"))
            try container.encode(runs.p99, forKey: FigureKey(name + "_p99_us_runs"))
        }
    }
}

/// Parts of one JSON line, each writing its own keys into the one flat object the docs and
/// scripts read: JSONEncoder gives every keyed container asked of one encoder the same object.
struct FlatFigures: Encodable {
    var parts: [any Encodable]

    init(_ parts: [any Encodable]) { self.parts = parts }

    func encode(to encoder: any Encoder) throws {
        for part in parts { try part.encode(to: encoder) }
    }
}

/// A key spelled at run time, from a series' name.
struct FigureKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }

    init(_ stringValue: String) { self.stringValue = stringValue }
    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { nil }
}

/// A number with a fixed count of decimals ("null" when it is not a number), for the reports'
/// text.
func fixed(_ value: Double, _ places: Int = 3) -> String {
    value.isFinite ? String(format: "%.\(places)f", value) : "null"
}
