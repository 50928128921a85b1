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

/// A number with a fixed count of decimals ("null" when it is not a number).
func fixed(_ value: Double, _ places: Int = 3) -> String {
    value.isFinite ? String(format: "%.\(places)f", value) : "null"
}

/// Fields in the order given; values already in JSON. Only for the reports not yet moved to
/// Encodable figures (hold, register, start-up, freeze); new reports use ``jsonLine(_:)``.
func jsonObject(_ fields: [(String, String)]) -> String {
    "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
}
