import VoipdVocabulary

extension MonotonicInstant {
    /// The instant `seconds` after the clock's origin: a test's clock reading.
    static func at(_ seconds: Int) -> MonotonicInstant { .origin + .seconds(seconds) }
}
