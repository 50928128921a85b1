import VoipdAdoption
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// What voipd knows of one adopted program: the copies it holds of the program's VoIP
/// sockets, what its last look found, and the quiet detector fed while it runs in the
/// background. Lives with the app's record; a relaunched process starts from nothing.
final class AdoptedProgram {
    let settings: AdoptionSettings
    var detector: QuietDetector
    /// The held copies by socket inode, and their names in the registry.
    var held: [UInt64: String] = [:]
    /// The last look's decisions.
    var report: AdoptionReport?
    /// Wall-clock time of the last look.
    var lastLook: Double?
    /// What the last look could not do, or nil.
    var warning: String?
    /// The detector's last verdict.
    var verdict: QuietVerdict?
    /// Sampled now: running in the background (set after each batch of lifecycle actions).
    var sampling = false
    /// The program ran since the last look (launched, woken): look before the next sample.
    var lookOwed = true
    /// How far each adopted socket's receiving had got at the last sample, by held socket id:
    /// what arrived since shows even when the program has read it already.
    var arrivalMarks: [UInt64: ReceiveMark] = [:]

    init(settings: AdoptionSettings) {
        self.settings = settings
        detector = QuietDetector(thresholds: settings.thresholds)
    }

    /// How often to sample while it runs in the background: once a second, or five times a
    /// window when the window is shorter than five seconds.
    var sampleInterval: Duration { min(.seconds(1), settings.thresholds.window / 5) }

    /// At most this many adopted sockets are listed in a status (each line can be long).
    static let listedInStatus = 16

    var status: AdoptionStatus {
        let adopted = report?.adopted ?? []
        var lines = adopted.prefix(Self.listedInStatus).map { decision in
            "\(decision.socket) (\(decision.rule ?? "?")\(held[decision.socket.inode] == nil ? ", not held" : ""))"
        }
        if adopted.count > Self.listedInStatus { lines.append("… and \(adopted.count - Self.listedInStatus) more") }
        return AdoptionStatus(rules: settings.policy.rules.map(\.description), adopted: lines, ignored: report?.ignored.count ?? 0,
                              lastLook: lastLook, warning: warning, activity: verdict.map(describe))
    }

    /// A verdict on the window, with the window it was judged over: the measured interval
    /// is at least that long, and says nothing of which window (a manifest's or the default).
    private func describe(_ verdict: QuietVerdict) -> String {
        switch verdict {
        case .quiet, .busy: "\(verdict) (\(SecondsFormat.tenths(settings.thresholds.window.seconds)) s window)"
        case .unreadData, .measuring: verdict.description
        }
    }
}
