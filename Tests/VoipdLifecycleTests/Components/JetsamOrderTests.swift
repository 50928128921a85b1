import Testing
import VoipdLifecycle
import VoipdVocabulary

@Suite("jetsamOrder")
struct JetsamOrderTests {
    static let apps = [
        JetsamCandidate(name: "small-suspended", state: .suspended, residentBytes: 10_000_000),
        JetsamCandidate(name: "big-suspended", state: .suspended, residentBytes: 90_000_000),
        JetsamCandidate(name: "huge-background", state: .background, residentBytes: 500_000_000),
        JetsamCandidate(name: "small-background", state: .background, residentBytes: 5_000_000),
        JetsamCandidate(name: "active", state: .active, residentBytes: 900_000_000),
        JetsamCandidate(name: "inactive", state: .inactive, residentBytes: 1_000_000),
        JetsamCandidate(name: "dead", state: .terminated, residentBytes: 999_000_000),
        JetsamCandidate(name: "never-launched", state: .notRunning, residentBytes: 999_000_000),
    ]

    @Test("a warning: suspended apps by memory, then background apps; the foreground is spared")
    func warning() {
        #expect(jetsamOrder(Self.apps, level: .warning)
            == ["big-suspended", "small-suspended", "huge-background", "small-background"])
    }

    @Test("critical: then the foreground, inactive before active whatever their size")
    func critical() {
        #expect(jetsamOrder(Self.apps, level: .critical)
            == ["big-suspended", "small-suspended", "huge-background", "small-background", "inactive", "active"])
    }

    @Test("apps that are not running are never candidates", arguments: MemoryPressureLevel.allCases)
    func deadNever(_ level: MemoryPressureLevel) {
        let order = jetsamOrder(Self.apps, level: level)
        #expect(!order.contains("dead") && !order.contains("never-launched"))
    }

    @Test("suspended apps too large to hibernate go first, largest first; then the rest by memory, hibernated ones among them")
    func overHibernationLimit() {
        let apps = Self.apps + [
            JetsamCandidate(name: "over-small", state: .suspended, residentBytes: 20_000_000, overHibernationLimit: true),
            JetsamCandidate(name: "over-big", state: .suspended, residentBytes: 60_000_000, overHibernationLimit: true),
            // Hibernated: little resident, still suspended.
            JetsamCandidate(name: "hibernated", state: .suspended, residentBytes: 1_000_000),
        ]
        #expect(jetsamOrder(apps, level: .warning)
            == ["over-big", "over-small", "big-suspended", "small-suspended", "hibernated", "huge-background", "small-background"])
    }

    @Test("ties go by name, whatever the input order")
    func ties() {
        let tied = ["c", "a", "b"].map { JetsamCandidate(name: $0, state: .suspended, residentBytes: 4096) }
        #expect(jetsamOrder(tied, level: .warning) == ["a", "b", "c"])
        #expect(jetsamOrder(tied.reversed(), level: .warning) == ["a", "b", "c"])
    }
}
