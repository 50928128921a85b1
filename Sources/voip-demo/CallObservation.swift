import Foundation

/// What one call showed, from every side, on the wall clock.
struct CallObservation {
    let number: Int
    /// The softphone's state (voipd's word) when the call was placed.
    let stateBefore: String
    /// The caller sent its INVITE.
    let inviteSent: Double?
    /// The embedded registrar sent the INVITE on to the softphone (nil with an external one).
    let inviteForwarded: TrafficRecord?
    /// voipd resumed the softphone: suspended → background.
    let resumed: Transition?
    /// The softphone read the INVITE.
    let inviteRead: Double?
    /// 180 Ringing and 200 OK reached the caller.
    let ringing: Double?
    let answered: Double?
    /// The softphone was suspended again once the call was over.
    let suspendedAgain: Transition?

    /// The wake latency as the demo reports it: from the INVITE leaving the caller to the
    /// softphone's resume, and to 180 Ringing back at the caller.
    var wakeLatency: String {
        guard let inviteSent, let resumed, let ringing else { return "not measured: a step is missing from the logs" }
        var text = "INVITE sent → softphone resumed \(WallClock.milliseconds(from: inviteSent, to: resumed.time))"
        if let forwarded = inviteForwarded {
            text += " (\(WallClock.milliseconds(from: forwarded.time, to: resumed.time)) after the registrar sent it on)"
        }
        return text + ", → 180 Ringing at the caller \(WallClock.milliseconds(from: inviteSent, to: ringing))"
    }

    /// The call in five rows: what, when after the INVITE left the caller, and the softphone.
    var table: [(step: String, after: String, softphone: String)] {
        func after(_ time: Double?) -> String {
            guard let inviteSent, let time else { return "?" }
            let milliseconds = (time - inviteSent) * 1000
            return String(format: milliseconds < 10 ? "%.2f ms" : "%.1f ms", milliseconds)
        }
        return [
            ("state before", "", stateBefore == "suspended" ? "suspended (kernel state T: stopped)" : stateBefore),
            ("INVITE → resumed", after(resumed?.time), "resumed by voipd: the INVITE is data on its held socket"),
            ("→ 180 Ringing", after(ringing), "ringing (the caller has the 180)"),
            ("→ 200 OK", after(answered), "answered (the caller has the 200)"),
            ("state after", after(suspendedAgain?.time), suspendedAgain.map { _ in "suspended again, the call over" } ?? "?"),
        ]
    }

    /// Each step of the call, as time since the caller sent the INVITE (--verbose).
    var steps: [String] {
        guard let inviteSent else { return [] }
        let steps: [(Double?, String)] = [
            (inviteForwarded?.time, "the registrar sent it on over the softphone's REGISTER connection"),
            (resumed?.time, "voipd resumed the softphone (\(resumed?.from ?? "?") → \(resumed?.to ?? "?"))"),
            (inviteRead, "the softphone read the INVITE"),
            (ringing, "180 Ringing reached the caller"),
            (answered, "200 OK reached the caller"),
            (suspendedAgain?.time, "voipd suspended the softphone again, the call over"),
        ]
        return steps.compactMap { time, what in
            guard let time else { return nil }
            let offset = "+" + WallClock.milliseconds(from: inviteSent, to: time)
            return String(repeating: " ", count: max(0, 13 - offset.count)) + offset + "  " + what
        }
    }
}
