import Foundation
import SIP

/// What the softphone says about itself: its transport and Contact, how its registration
/// is kept alive, and which of its SIP sockets voipd holds (or refused, and why). It is
/// logged as one JSON line, `status: {…}`, whenever it changes, for people and scripts to
/// read. voipd hears what matters to it with the keep-alive (how long the grant keeps the
/// phone reachable), and warns in its own log and `voipctl status` too.
struct SoftphoneStatus: Codable, Equatable {
    /// The registration as last granted.
    /// Seconds are real ones (the registrar's), but the keep-alive's, which are voipd's
    /// (``VoipdTime``).
    struct Registration: Codable, Equatable {
        var requestedExpires: Int
        var grantedExpires: Int
        /// How long after a registration the running phone registers again.
        var refreshSeconds: Int
        /// The keep-alive interval set with voipd, in its seconds (nil without voipd, or
        /// while refused).
        var keepAliveSeconds: Int?
        /// The keep-alive is shorter than asked (`--keep-alive`) because the grant is short.
        var keepAliveLowered: Bool
        /// How long a suspended phone may go unregistered before a keep-alive: 0 when the
        /// grant is covered.
        var lapseSeconds: Int
        /// What to do about a lapse, or why the keep-alive could not be set.
        var warning: String?
    }

    /// One of the SIP sockets the softphone asked voipd to hold.
    struct VoIPSocket: Codable, Equatable {
        var name: String
        /// `UDP 127.0.0.1:5062, connected to 127.0.0.1:5060`, `TCP listening on …`.
        var detail: String
        var held: Bool
        /// voipd's answer when it refused the socket: while suspended, nothing arriving on
        /// it wakes the phone.
        var refusal: String?
    }

    var transport: String
    var contact: String
    var supervised: Bool
    var registration: Registration?
    var voipSockets: [VoIPSocket] = []

    /// The JSON line's text (keys sorted, so that equal statuses print the same).
    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
