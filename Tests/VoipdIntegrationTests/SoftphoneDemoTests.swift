import Glibc
import Testing
import VoipdSystem

/// `voip-demo` itself, as `swift run voip-demo` runs it.
@Suite("Softphone demo", .serialized)
struct SoftphoneDemoTests {
    /// The pids a demo run printed for the processes it started.
    static func startedPIDs(_ output: String) -> [pid_t] {
        let patterns = ["voipd: pid ", "   pid ", "(pid "]
        return output.split(separator: "\n").compactMap { line in
            for pattern in patterns {
                guard let range = line.range(of: pattern) else { continue }
                return pid_t(line[range.upperBound...].prefix { $0.isNumber })
            }
            return nil
        }
    }

    /// Runs the demo; checks it succeeded and left none of its processes running.
    static func runDemo(_ arguments: [String] = []) throws -> String {
        let (status, output) = try runCommand([Binaries.path("voip-demo")] + arguments, timeout: .seconds(60))
        #expect(status == 0, "voip-demo failed:\n\(output)")
        #expect(output.contains("voip-demo: OK"))
        #expect(output.contains("wake latency: INVITE sent → softphone resumed"))
        let pids = startedPIDs(output)
        #expect(pids.count >= 4, "voipd, the softphone and two callers: \(pids)")
        for pid in pids {
            let state = processState(pid)
            #expect(state == nil || state == "Z", "pid \(pid) is still running (\(state.map(String.init) ?? ""))")
        }
        return output
    }

    @Test("voip-demo exits 0 with the embedded registrar, and stops every process it started")
    func demoWithEmbeddedRegistrar() throws {
        let output = try Self.runDemo()
        #expect(output.contains("the INVITE went out on the REGISTER connection"))
    }
}
