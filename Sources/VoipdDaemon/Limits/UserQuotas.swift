import Glibc
import VoipdProtocol
import VoipdSystem

/// Per-user quotas: what one uid may hold of voipd's descriptors (``DaemonLimits``). A uid
/// at a quota is refused with `userQuotaExceeded`; root and voipd's own uid are not counted.
extension Daemon {
    /// Whether `uid` is held to the per-user limits.
    func isQuotaExempt(_ uid: uid_t) -> Bool { uid == 0 || uid == geteuid() }

    /// The refusal of a new connection from `uid`, or nil when it may connect (`accepted`
    /// is not yet among the clients).
    func connectionQuotaRefusal(_ uid: uid_t) -> ProtocolError? {
        guard !isQuotaExempt(uid) else { return nil }
        let quota = configuration.limits.connectionsPerUser
        let open = clients.values.reduce(0) { $0 + ($1.credentials.uid == uid ? 1 : 0) }
        guard open >= quota else { return nil }
        return ProtocolError(.userQuotaExceeded, "uid \(uid) already has \(open) connections open (limits.connectionsPerUser: \(quota))")
    }

    /// Throws when `uid` may not have one more app.
    func checkAppQuota(_ uid: uid_t) throws(ProtocolError) {
        guard !isQuotaExempt(uid) else { return }
        let quota = configuration.limits.appsPerUser
        let owned = apps.values.reduce(0) { $0 + ($1.uid == uid ? 1 : 0) }
        guard owned < quota else {
            clients.admission.quotaRefusals += 1
            throw ProtocolError(.userQuotaExceeded, "uid \(uid) already has \(owned) apps (limits.appsPerUser: \(quota)); `voipctl forget` drops one that is not running")
        }
    }

    /// Throws when voipd may not hold one more VoIP socket for `uid`'s apps.
    func checkHeldSocketQuota(_ uid: uid_t) throws(ProtocolError) {
        guard !isQuotaExempt(uid) else { return }
        let quota = configuration.limits.heldSocketsPerUser
        let held = apps.values.reduce(0) { $0 + ($1.uid == uid ? registry.count(of: $1.id) : 0) }
        guard held < quota else {
            clients.admission.quotaRefusals += 1
            throw ProtocolError(.userQuotaExceeded, "voipd already holds \(held) VoIP sockets for uid \(uid)'s apps (limits.heldSocketsPerUser: \(quota))")
        }
    }
}
