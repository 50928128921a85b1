import Glibc
import VoipdSystem

/// The kernel's floor for the wake path: `wake_floor.c` from the shared bench directory,
/// built with gcc into a temporary directory and run with the same settings as voipd.
struct WakeFloor {
    let binary: String

    /// `gcc -O2 -Wall -o DIRECTORY/wake_floor SHARED/bench/wake_floor.c -lm`.
    static func build(shared: String, into directory: String) throws -> WakeFloor {
        let source = shared + "/bench/wake_floor.c"
        guard access(source, R_OK) == 0 else { throw BenchError("no \(source): pass --shared PATH (the directory holding bench/)") }
        let binary = directory + "/wake_floor"
        let status = try runToCompletion(["gcc", "-O2", "-Wall", "-o", binary, source, "-lm"], output: 2)
        guard status == .exited(0) else { throw BenchError("gcc could not build \(source): \(status)") }
        return WakeFloor(binary: binary)
    }

    /// Runs it (`-n children -m wakes -c cpu -s seed -q`, and `-P` when the supervisor
    /// writes the stamps itself) and returns its `name value unit` lines as name → value.
    func run(children: Int, wakes: Int, placement: CPUPlacement, seed: UInt64, supervisorIsPeer: Bool = false) throws -> [String: Double] {
        let command = [binary, "-n", "\(children)", "-m", "\(wakes)", "-c", "\(placement.rawValue)", "-s", "\(seed)", "-q"]
            + (supervisorIsPeer ? ["-P"] : [])
        let pipe = try makePipe()
        let readEnd = pipe.first
        let writeEnd = pipe.second
        let pid = try spawnProcess(SpawnRequest(arguments: GuardedExec.wrap(command), environment: currentEnvironment(),
                                                standardOutput: writeEnd.rawValue))
        let process = try PidFd(pid: pid)
        // Only the floor holds the write end now: the output ends when it does.
        try writeEnd.close()
        var output: [UInt8] = []
        while case let bytes = try readEnd.read(upTo: 65536), !bytes.isEmpty { output += bytes }
        let status = try process.waitForExit()
        var figures: [String: Double] = [:]
        for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count >= 2, let value = Double(fields[1]) { figures[String(fields[0])] = value }
        }
        guard status == .exited(0), figures["wake_total_p50"] != nil, figures["wake_total_p99"] != nil else {
            throw BenchError("\(command.joined(separator: " ")) failed (\(status)):\n\(String(decoding: output, as: UTF8.self))")
        }
        return figures
    }
}
