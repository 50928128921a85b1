import Glibc
import VoipdSystem

/// One of the shared bench directory's floor programs, built with gcc into a temporary
/// directory; it prints `name value unit` lines.
struct FloorProgram {
    let binary: String

    /// `gcc -O2 -Wall -o DIRECTORY/NAME SHARED/bench/NAME.c -lm`.
    static func build(_ name: String, shared: String, into directory: String) throws -> FloorProgram {
        let source = shared + "/bench/\(name).c"
        guard access(source, R_OK) == 0 else { throw BenchError("no \(source): pass --shared PATH (the directory holding bench/)") }
        return try compile(source, into: directory + "/\(name)")
    }

    /// `gcc -O2 -Wall -o BINARY SOURCE LIBRARIES -lm`.
    static func compile(_ source: String, into binary: String, libraries: [String] = []) throws -> FloorProgram {
        let status = try runToCompletion(["gcc", "-O2", "-Wall", "-o", binary, source] + libraries + ["-lm"], output: 2)
        guard status == .exited(0) else { throw BenchError("gcc could not build \(source): \(status)") }
        return FloorProgram(binary: binary)
    }

    /// Runs it with `arguments` and returns its figures, name → value; a run that fails or
    /// lacks one of the `required` figures is an error showing its output.
    func run(_ arguments: [String], required: [String]) throws -> [String: Double] {
        let command = [binary] + arguments
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
        guard status == .exited(0), required.allSatisfy({ figures[$0] != nil }) else {
            throw BenchError("\(command.joined(separator: " ")) failed (\(status)):\n\(String(decoding: output, as: UTF8.self))")
        }
        return figures
    }
}

/// The kernel's floor for the wake path: `wake_floor.c` (SIGSTOP), or `freeze_floor.c` (the
/// cgroup v2 freezer, its cgroups under `freezerRoot`), run with the same settings as voipd.
struct WakeFloor {
    let program: FloorProgram
    var freezerRoot: String?

    static func build(shared: String, into directory: String) throws -> WakeFloor {
        WakeFloor(program: try FloorProgram.build("wake_floor", shared: shared, into: directory))
    }

    static func buildFreezer(shared: String, into directory: String, root: String) throws -> WakeFloor {
        WakeFloor(program: try FloorProgram.build("freeze_floor", shared: shared, into: directory), freezerRoot: root)
    }

    /// Runs it (`-n children -m wakes -c cpu -s seed -q`, and `-P` when the supervisor
    /// writes the stamps itself).
    func run(children: Int, wakes: Int, placement: CPUPlacement, seed: UInt64, supervisorIsPeer: Bool = false) throws -> [String: Double] {
        try program.run(["-n", "\(children)", "-m", "\(wakes)", "-c", "\(placement.rawValue)", "-s", "\(seed)", "-q"]
                            + (supervisorIsPeer ? ["-P"] : []) + (freezerRoot.map { ["-v", "2", "-r", $0] } ?? []),
                        required: ["wake_total_p50", "wake_total_p99"])
    }
}
