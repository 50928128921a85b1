import VoipdVocabulary

/// An app that memory pressure may terminate.
public struct JetsamCandidate: Equatable, Sendable {
    public var name: String
    public var state: AppState
    public var residentBytes: UInt64

    public init(name: String, state: AppState, residentBytes: UInt64) {
        self.name = name
        self.state = state
        self.residentBytes = residentBytes
    }
}

/// The order in which memory pressure terminates apps, as iOS did it: suspended apps
/// first, largest resident memory first; then apps running in the background, largest
/// first; foreground apps (inactive, then active) only at the critical level. Apps that are
/// not running are not candidates. Ties go by name, so the order is deterministic.
public func jetsamOrder(_ candidates: [JetsamCandidate], level: MemoryPressureLevel) -> [String] {
    func tier(_ state: AppState) -> Int? {
        switch state {
        case .suspended: return 0
        case .background: return 1
        case .inactive: return level == .critical ? 2 : nil
        case .active: return level == .critical ? 3 : nil
        case .notRunning, .terminated: return nil
        }
    }
    return candidates
        .compactMap { candidate in tier(candidate.state).map { (tier: $0, candidate: candidate) } }
        .sorted { a, b in
            if a.tier != b.tier { return a.tier < b.tier }
            if a.candidate.residentBytes != b.candidate.residentBytes { return a.candidate.residentBytes > b.candidate.residentBytes }
            return a.candidate.name < b.candidate.name
        }
        .map(\.candidate.name)
}
