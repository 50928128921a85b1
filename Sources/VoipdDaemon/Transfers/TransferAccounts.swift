import FoundationEssentials
import Glibc
import VoipdSystem

/// The account each app's transfers run as: the uid (and group) of the app when it opened
/// its first session. Kept beside the transfer store, because tasks outlive the app's
/// record (a restarted voipd carries on with the transfers of apps it has not seen yet), and
/// because the account is what stands between an app and the files of other users: the
/// agent runs as it, and a request for the app from another uid is refused.
final class TransferAccounts {
    struct Account: Codable, Equatable {
        var uid: uid_t
        var gid: gid_t
    }

    private let path: String
    private(set) var byApp: [String: Account] = [:]

    init(path: String) {
        self.path = path
    }

    /// Reads the file; a problem is returned (the accounts start empty).
    func load() -> String? {
        guard let bytes = contentsIfReadable(path) else { return nil }
        let data = Data(bytes)
        do {
            byApp = try JSONDecoder().decode([String: Account].self, from: data)
            return nil
        } catch {
            return "cannot read \(path): \(error); the transfers of apps not seen since wait for them to connect"
        }
    }

    /// Binds the app to `uid` if it has no account yet; throws when it belongs to another
    /// (root may act for any app).
    func bind(_ app: String, uid: uid_t, gid: gid_t) throws -> Account {
        if let account = byApp[app] {
            guard uid == 0 || uid == account.uid else {
                throw TransferAccountError(description: "the transfers of \(app) belong to uid \(account.uid)")
            }
            return account
        }
        let account = Account(uid: uid, gid: gid)
        byApp[app] = account
        try save()
        return account
    }

    func account(of app: String) -> Account? { byApp[app] }

    /// The credentials of the app's agent: nil to run it as voipd itself (the app runs as
    /// voipd's uid); refused when voipd cannot take the app's uid.
    func credentials(of app: String) throws -> SpawnCredentials? {
        guard let account = byApp[app] else {
            throw TransferAccountError(description: "no account is recorded for the transfers of \(app)")
        }
        if account.uid == geteuid() { return nil }
        guard geteuid() == 0 else {
            throw TransferAccountError(description: "voipd (uid \(geteuid())) cannot run transfers as uid \(account.uid)")
        }
        if let entry = getpwuid(account.uid), let name = entry.pointee.pw_name {
            return try SpawnCredentials(user: String(cString: name), uid: account.uid, gid: entry.pointee.pw_gid)
        }
        return SpawnCredentials(uid: account.uid, gid: account.gid, supplementaryGroups: [])
    }

    private func save() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try encoder.encode(byApp).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}

struct TransferAccountError: Error, CustomStringConvertible {
    var description: String
}
