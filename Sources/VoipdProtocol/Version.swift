/// voipd's release: the one place its version is written. `voipd --version` and
/// `voipctl --version` print it; Deploy/ reads it from `voipd --version` for the Debian
/// package's version and voipd.pc, so nothing else repeats it.
public enum VoipdVersion {
    /// The release, in semantic-versioning form.
    public static let release = "0.1.0"

    /// The `--version` line of a program of this package: its name, the release, and the
    /// wire protocol version it speaks (the frames' version byte, docs/PROTOCOL.md).
    public static func line(program: String) -> String {
        "\(program) \(release) (protocol \(Frame.version))"
    }
}
