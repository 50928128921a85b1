import Glibc
import VoipdSystem
import VoipdVocabulary

/// The SHA-256 of a file, by coreutils' sha256sum (Foundation on Linux has no digest).
public func sha256(_ path: String) throws -> String {
    let directory = try makeTemporaryDirectory("voipd-sha")
    defer { removeTree(directory) }
    let output = try openFile(directory + "/out", flags: O_WRONLY | O_CREAT | O_TRUNC)
    let process = try spawn(SpawnRequest(arguments: ["sha256sum", path], environment: currentEnvironment(), standardOutput: output.rawValue))
    let status = try process.waitForExit()
    guard status == .exited(0), let text = ProcFS.read(directory + "/out"), let digest = text.split(separator: " ").first else {
        throw TestFailure("sha256sum \(path) failed: \(status)")
    }
    return String(digest)
}
