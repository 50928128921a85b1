/// Seconds as voipd writes them in messages.
public enum SecondsFormat {
    /// A number of seconds to a tenth, without a trailing ".0": `2`, `2.5`.
    public static func tenths(_ value: Double) -> String {
        let tenths = (value * 10).rounded() / 10
        return tenths == tenths.rounded() && abs(tenths) < 1e15 ? String(Int(tenths)) : "\(tenths)"
    }
}
