import Foundation
import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport

/// Deploy/install.sh, the tree the Debian package is made of (Deploy/build-deb.sh; CI builds
/// the .deb from a release build, installs and purges it with Deploy/check-deb.sh): here from
/// the debug build, checked for its layout, its shared library and its pkg-config file, and
/// used as an app would use an installed libvoipd.
@Suite("Package tree")
struct PackageTreeTests {
    static let gcc = "/usr/bin/gcc"
    static let pkgConfig = "/usr/bin/pkg-config"
    static let readelf = "/usr/bin/readelf"

    @Test("install.sh lays out programs, units, configuration, manual, completions, header, libvoipd.so.1, libvoipd.a and voipd.pc; an app built with pkg-config against the tree links libvoipd.so.1 and runs under voipd",
          .enabled(if: toolAvailableOrCI(gcc) && toolAvailableOrCI(pkgConfig), "needs gcc and pkg-config (with CI=true their absence is a failure)"),
          .disabled(if: underSanitizer, LibvoipdTests.linkedWithSanitizedLibrary))
    func installedTree() throws {
        try #require(toolExists(Self.gcc) && toolExists(Self.pkgConfig) && toolExists(Self.readelf))
        let directory = try makeTemporaryDirectory("voipd-package-tree")
        defer { removeTree(directory) }
        let tree = directory + "/root"
        let installed = try runCommand(["/bin/bash", DeployTests.deploy + "/install.sh", Binaries.directory, tree], timeout: .seconds(120))
        try #require(installed.status == 0, "install.sh:\n\(installed.output)")

        let multiarch = try runCommand([Self.gcc, "-print-multiarch"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let libdir = "/usr/lib" + (multiarch.isEmpty ? "" : "/\(multiarch)")
        let unitdir = (try? runCommand([Self.pkgConfig, "--variable=systemdsystemunitdir", "systemd"]))
            .map { $0.output.trimmingCharacters(in: .whitespacesAndNewlines) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/lib/systemd/system"
        var expected = ["/usr/bin/voipd", "/usr/bin/voipctl", "/usr/libexec/voipd/voipd-transfer", "/etc/voipd/voipd.json", "/usr/include/voipd.h",
                        "\(libdir)/libvoipd.so.1", "\(libdir)/libvoipd.so", "\(libdir)/libvoipd.a", "\(libdir)/pkgconfig/voipd.pc",
                        "/usr/share/bash-completion/completions/voipctl", "/usr/share/zsh/vendor-completions/_voipctl",
                        "/usr/share/fish/vendor_completions.d/voipctl.fish", "/usr/share/doc/voipd/DEPLOY.md"]
        expected += ["voipd.service", "voipd.socket", "voipd-stats.service", "voipd-stats.timer"].map { "\(unitdir)/\($0)" }
        expected += ManualPageTests.pages.map { "/usr/share/man/man\($0.split(separator: ".").last!)/\($0).gz" }
        for path in expected {
            #expect(access(tree + path, F_OK) == 0, "\(path) is missing")
        }
        // The units start the installed programs and point at the installed documents.
        let service = try String(contentsOfFile: tree + unitdir + "/voipd.service", encoding: .utf8)
        #expect(service.contains("ExecStart=/usr/bin/voipd --config /etc/voipd/voipd.json"))
        #expect(!service.contains("/usr/local/"))
        // The completion installed is voipctl's own.
        #expect(try String(contentsOfFile: tree + "/usr/share/bash-completion/completions/voipctl", encoding: .utf8)
                == (try runCommand([Binaries.voipctl, "completion", "bash"]).output))

        // libvoipd.so.1: its soname, libc alone, exactly voipd.h's functions, versioned.
        let library = tree + libdir + "/libvoipd.so.1"
        let dynamic = try runCommand([Self.readelf, "-dW", library]).output
        #expect(dynamic.contains("Library soname: [libvoipd.so.1]"))
        #expect(dynamic.split(separator: "\n").filter { $0.contains("(NEEDED)") }.map { $0.contains("[libc.so.6]") } == [true])
        let exported = try runCommand([Self.readelf, "--dyn-syms", "-W", library]).output.split(separator: "\n").compactMap { line -> String? in
            let fields = line.split(separator: " ")
            guard fields.count >= 8, fields[3] == "FUNC", fields[4] == "GLOBAL", fields[6] != "UND" else { return nil }
            return String(fields[7])
        }
        // API 1's functions in VOIPD_1, those API 2 added in VOIPD_1.2 (Deploy/libvoipd/libvoipd.map).
        let added: Set = ["voipd_keep_alive_minimum", "voipd_time_scale", "voipd_set_keep_alive_reachable"]
        #expect(exported.allSatisfy { $0.hasSuffix(added.contains(String($0.prefix { $0 != "@" })) ? "@@VOIPD_1.2" : "@@VOIPD_1") },
                "\(exported)")
        #expect(Set(exported.map { String($0.prefix { $0 != "@" }) }) == (try LibvoipdTests.declaredFunctions()))

        // pkg-config as an app's build would call it, pointed at the tree.
        let environment = currentEnvironment() + ["PKG_CONFIG_SYSROOT_DIR=\(tree)", "PKG_CONFIG_LIBDIR=\(tree)\(libdir)/pkgconfig"]
        let flags = try runCommand([Self.pkgConfig, "--cflags", "--libs", "voipd"], environment: environment)
        try #require(flags.status == 0, "pkg-config: \(flags.output)")
        #expect(flags.output.contains("-I\(tree)/usr/include") && flags.output.contains("-lvoipd"), "\(flags.output)")
        #expect(try runCommand([Self.pkgConfig, "--modversion", "voipd"], environment: environment).output
                == (try runCommand([Binaries.voipd, "--version"]).output.split(separator: " ")[1] + "\n"))
        let app = directory + "/lifecycle_app"
        let built = try runCommand([Self.gcc, "-std=c11", "-Wall", "-Wextra", "-Werror", LibvoipdTests.tests + "/lifecycle_app.c", "-o", app]
                                   + flags.output.split(whereSeparator: \.isWhitespace).map(String.init))
        try #require(built.status == 0, "gcc: \(built.output)")
        #expect(try runCommand([Self.readelf, "-dW", app]).output.contains("Shared library: [libvoipd.so.1]"))

        // It runs under voipd with the tree's library: hello, register, background, suspended.
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let peer = try harness.makePeer()
        let output = directory + "/app.log"
        let log = try openFile(output, flags: O_WRONLY | O_CREAT | O_TRUNC)
        let launched = try harness.control.launch([app, "127.0.0.1", "\(peer.port)"], name: "installed",
                                                  environment: ["LD_LIBRARY_PATH=\(tree)\(libdir)"], waitForConnection: true, output: log.rawValue)
        let pid = try #require(launched.pid)
        _ = try peer.accept()
        try waitForText("\(pid) registered sip: ok", in: output)
        try harness.suspend("installed")
        #expect(processState(pid) == "T")
    }
}
