import Glibc
import VoipdSystem

/// Writes `text` to the file at `path`, created (with `mode`) or truncated.
public func writeTextFile(_ text: String, to path: String, mode: mode_t = 0o644) throws {
    try openFile(path, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: mode).writeAll(Array(text.utf8))
}
