import Glibc
import VoipdSystem

/// The package's executables, built next to the test bundle.
enum Binaries {
    static let directory: String = {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let exe = n > 0 ? String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        return parentDirectory(exe)
    }()

    static func path(_ name: String) -> String { directory + "/" + name }

    static var voipd: String { path("voipd") }
    static var voipctl: String { path("voipctl") }
    static var testApp: String { path("voip-test-app") }
}

extension Binaries {
    /// Flags that keep a test's voipd to the test's `directory` rather than the machine's
    /// configuration: a configuration file of its own, and an apps directory with nothing in it.
    /// A root voipd reads /etc/voipd/voipd.json and /etc/voipd/apps.d when they exist (voipd
    /// installed on the machine, or the .deb that CI installs and purges while others' tests
    /// run): it would take its state directory, limits and manifests from them, and share
    /// the package's state file with every other voipd doing the same, each resuming the
    /// others' apps. Later flags override these.
    ///
    /// The file says `"suspension": "signal"`, whatever the machine offers: the tests that
    /// see a suspended app as the kernel's state `T` are about SIGSTOP, and those of the
    /// freezer (Freezer/) name a scratch cgroup of their own, or say `auto` to see what it
    /// picks. (`auto` picks the cgroup v1 freezer on a hybrid machine, as root, outside systemd.)
    static func ownConfiguration(in directory: String, appsDirectory: Bool = true) throws -> [String] {
        let file = directory + "/no-configuration.json"
        try openFile(file, flags: O_WRONLY | O_CREAT | O_TRUNC).writeAll(Array(#"{"suspension": "signal"}"#.utf8 + [0x0a]))
        return ["--config", file] + (appsDirectory ? ["--apps-directory", directory + "/no-apps.d"] : [])
    }
}

func parentDirectory(_ path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return String(path[..<slash])
}
