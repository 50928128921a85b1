import Foundation
import Testing
import VoipdLifecycle
import VoipdVocabulary

/// The daemon takes a new count of held sockets without an input when the lifecycle says
/// that is all the input would do: in every phase, either it declines, or feeding
/// `.heldSocketsChanged` instead answers nothing and leaves the same state.
@Suite("takeHeldSocketCountQuietly")
struct HeldSocketCountTests {
    @Test("taking the count quietly leaves what the input leaves, or is declined", arguments: LifecyclePhase.allCases)
    func agreesWithTheInput(phase: LifecyclePhase) throws {
        for count in [0, 1, 3] {
            var driver = Driver.at(phase)
            var quiet = driver.app
            let taken = quiet.takeHeldSocketCountQuietly(count)
            let outcome = driver.feed(.heldSocketsChanged(count))
            #expect(taken == (phase.isAlive && !phase.isStopped), "\(phase), \(count) sockets")
            guard taken else { continue }
            #expect(outcome.reply == .accepted && outcome.actions.isEmpty, "\(phase), \(count) sockets: \(outcome.actions)")
            #expect(try Self.encoded(quiet) == Self.encoded(driver.app), "\(phase), \(count) sockets")
        }
    }

    private static func encoded(_ app: AppLifecycle) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try encoder.encode(app)
    }
}
