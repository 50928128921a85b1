/// voipd's seconds and real ones. voipd may run the app's lifecycle faster than real time
/// (`--time-scale`, 1 in use): a keep-alive of N of the app's seconds then wakes it every
/// N × `scale` real seconds, while a registrar's grant is in real seconds. Both must be in
/// the same seconds to be compared.
struct VoipdTime {
    /// How long one of the app's seconds lasts, in real seconds.
    let scale: Double

    /// A product or quotient of binary fractions is off by far less than this
    /// (600 × 0.1 = 60.00000000000001): no whole second is gained or lost by it.
    private static let slack = 1e-6

    /// `seconds` of the app's in whole real seconds (at least 1), rounded `up` or to the
    /// nearest.
    func realSeconds(_ seconds: Int, roundingUp up: Bool) -> Int {
        let exact = Double(seconds) * scale
        return max(1, Int(up ? (exact - Self.slack).rounded(.up) : exact.rounded()))
    }

    /// `seconds` real ones in whole seconds of the app's, rounded down: never longer than
    /// they are.
    func appSeconds(_ seconds: Int) -> Int {
        Int((Double(seconds) / scale + Self.slack).rounded(.down))
    }

    /// Whole seconds of the app's from what voipd says (a minimum), rounded up.
    static func wholeSeconds(_ seconds: Double) -> Int {
        Int((seconds - slack).rounded(.up))
    }

    /// Said after a figure in the app's seconds when they are not real ones.
    var note: String {
        scale == 1 ? "" : " (keep-alives in voipd's seconds, each \(scale) real s: it runs at a time scale of \(scale))"
    }
}
