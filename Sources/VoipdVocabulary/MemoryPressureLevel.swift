/// How hard memory is pressed: a warning ends background apps only; at the critical level
/// even foreground apps may go.
public enum MemoryPressureLevel: String, Codable, Sendable, CaseIterable {
    case warning
    case critical
}
