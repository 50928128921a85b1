import VoipdProtocol

/// The rule for names of apps and sockets, in manifests and requests alike: 1–64
/// characters of `A–Z a–z 0–9 . _ - @`, not `.` or `..` (a name becomes a file name).
public enum NameRule {
    /// Throws ``ProtocolError`` `invalidName` for a name that breaks the rule.
    public static func check(_ name: String, what: String) throws(ProtocolError) {
        let allowed = name.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c == 0x2d || c == 0x5f || c == 0x2e || c == 0x40
        }
        guard !name.isEmpty, name.utf8.count <= 64, allowed, name != ".", name != ".." else {
            throw ProtocolError(.invalidName, "\(what) name \"\(name)\" must be 1–64 characters of A–Z a–z 0–9 . _ - @")
        }
    }
}
