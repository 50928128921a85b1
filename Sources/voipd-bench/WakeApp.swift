import Foundation
import Glibc
import VoipdSystem
import VoipdTestSupport

/// The app the wake benchmark wakes (`--app`): voipd launches N copies of it.
enum WakeAppKind: String, CaseIterable {
    /// `voipd-bench app`: a Swift app using VoipClient, built as this executable is (the default).
    case swift
    /// `Benchmarks/wake_app.c`: the same app in C using libvoipd, built with gcc like the
    /// floor, so that the app is of the floor's child's size (a few pages of C and libc).
    case c
}

/// The command that starts one app of a kind, before its `--connect PATH --index N [--cpu C]`.
struct WakeApp {
    let kind: WakeAppKind
    let command: [String]

    static let swift = WakeApp(kind: .swift, command: [BenchPaths.executable, "app"])

    /// Builds `Benchmarks/wake_app.c` with the floor's compiler and flags (`gcc -O2 -Wall`),
    /// libvoipd's sources compiled in: as an app linking `libvoipd.a` has it, nothing but libc
    /// loaded beside it.
    static func buildC(into directory: String) throws -> WakeApp {
        let library = packageDirectory + "/Sources/libvoipd"
        let source = packageDirectory + "/Benchmarks/wake_app.c"
        let libraryFiles = ((try? FileManager.default.contentsOfDirectory(atPath: library)) ?? [])
            .filter { $0.hasSuffix(".c") }.sorted().map { library + "/" + $0 }
        guard access(source, R_OK) == 0, !libraryFiles.isEmpty else {
            throw BenchError("--app c needs \(source) and libvoipd's sources in \(library)")
        }
        let program = try FloorProgram.compile(source, into: directory + "/wake_app",
                                               libraries: ["-I", library, "-I", library + "/include"] + libraryFiles)
        return WakeApp(kind: .c, command: [program.binary])
    }
}
