import VoipdVocabulary

/// An app that memory pressure may terminate.
public struct JetsamCandidate: Equatable, Sendable {
    public var name: String
    public var state: AppState
    public var residentBytes: UInt64
    /// The app was found too large to hibernate (its dirty memory over the limit): seed 004
    /// ends such an app rather than page it out, so it goes first.
    public var overHibernationLimit: Bool

    public init(name: String, state: AppState, residentBytes: UInt64, overHibernationLimit: Bool = false) {
        self.name = name
        self.state = state
        self.residentBytes = residentBytes
        self.overHibernationLimit = overHibernationLimit
    }
}

/// The order in which memory pressure terminates apps, as iOS did it: suspended apps too
/// large to hibernate first (seed 004), then the other suspended apps, hibernated ones among
/// them, largest resident memory first; then apps running in the background, largest first;
/// foreground apps (inactive, then active) only at the critical level. Apps that are not
/// running are not candidates. Ties go by name, so the order is deterministic.
public func jetsamOrder(_ candidates: [JetsamCandidate], level: MemoryPressureLevel) -> [String] {
    func tier(_ candidate: JetsamCandidate) -> Int? {
        switch candidate.state {
        case .suspended: return candidate.overHibernationLimit ? 0 : 1
        case .background: return 2
        case .inactive: return level == .critical ? 3 : nil
        case .active: return level == .critical ? 4 : nil
        case .notRunning, .terminated: return nil
        }
    }
    return candidates
        .compactMap { candidate in tier(candidate).map { (tier: $0, candidate: candidate) } }
        .sorted { a, b in
            if a.tier != b.tier { return a.tier < b.tier }
            if a.candidate.residentBytes != b.candidate.residentBytes { return a.candidate.residentBytes > b.candidate.residentBytes }
            return a.candidate.name < b.candidate.name
        }
        .map(\.candidate.name)
}
