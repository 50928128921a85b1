import Glibc
import VoipdSystem
import VoipdTestSupport

/// Where things are: this executable, the voipd binary beside it, and the shared floor
/// programs (the package it was built from is VoipdTestSupport's `packageDirectory`).
enum BenchPaths {
    /// This executable, symbolic links resolved (`/proc/self/exe`).
    static let executable: String = {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        return n > 0 ? String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
    }()

    /// `../shared` next to the package, where the floor programs live.
    static var defaultShared: String { parentDirectory(packageDirectory) + "/shared" }

    /// The voipd built with this executable, after making sure it is up to date: `swift run
    /// voipd-bench` builds only the bench's own dependencies, which do not include voipd.
    static func buildVoipd() throws -> String {
        let binDirectory = parentDirectory(executable)
        let configuration = String(binDirectory.split(separator: "/").last ?? "release")
        // .../SCRATCH/TRIPLE/CONFIGURATION/voipd-bench
        let scratch = parentDirectory(parentDirectory(binDirectory))
        let command = ["swift", "build", "-c", configuration, "--product", "voipd", "--scratch-path", scratch]
        progress("building voipd: \(command.joined(separator: " ")) (in \(packageDirectory))")
        let status = try runToCompletion(command, workingDirectory: packageDirectory, output: 2)
        let binary = binDirectory + "/voipd"
        guard status == .exited(0), access(binary, X_OK) == 0 else {
            throw BenchError("could not build voipd (\(status)); build it and pass --voipd PATH")
        }
        return binary
    }
}

/// The directory part of a path ("." when there is none).
func parentDirectory(_ path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
}

/// Runs a command with its output on `output` and waits for it to end.
func runToCompletion(_ command: [String], workingDirectory: String? = nil, output: CInt) throws -> ProcessStatus {
    let pid = try spawnProcess(SpawnRequest(arguments: command, environment: currentEnvironment(), workingDirectory: workingDirectory,
                                            standardOutput: output, standardError: 2))
    return try PidFd(pid: pid).waitForExit()
}

/// A line on standard error about what the bench is doing.
func progress(_ message: String) {
    writeError("voipd-bench: \(message)\n")
}

/// Writes to standard error in one write(2).
func writeError(_ text: String) {
    var bytes = Array(text.utf8)
    _ = write(2, &bytes, bytes.count)
}

/// A failure with something to say.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
