import FoundationEssentials
import Glibc
import VoipdDaemon
import VoipdProtocol
import VoipdSystem

/// Writes to standard error in one write(2).
func writeStandardError(_ text: String) {
    var text = text
    text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

func fail(_ message: String, status: Int32) -> Never {
    writeStandardError("<3>voipd: \(message)\n")
    exit(status)
}

var arguments = Array(CommandLine.arguments.dropFirst())

let invocation: DaemonCommandLine.Invocation
do {
    invocation = try DaemonCommandLine.parse(arguments)
} catch let error as DaemonCommandLine.UsageError {
    if !error.description.isEmpty { writeStandardError("voipd: \(error.description)\n") }
    writeStandardError(DaemonCommandLine.usage + "\n")
    exit(error.description.isEmpty ? 0 : 2)
}

if invocation.versionOnly {
    print(VoipdVersion.line(program: "voipd"))
    exit(0)
}

let environment = ProcessInfo.processInfo.environment
let configuration: DaemonConfiguration
do {
    configuration = try invocation.source.load(environment: environment)
} catch {
    fail("invalid configuration: \(error)", status: ConfigurationError.exitStatus)
}

if invocation.checkOnly {
    let errors = Daemon.checkManifests(configuration)
    for error in errors { writeStandardError("<3>voipd: invalid manifest: \(error)\n") }
    guard errors.isEmpty else { exit(ConfigurationError.exitStatus) }
    print("configuration \(configuration.source.file ?? "(none: defaults and flags)") is valid; manifests in \(configuration.appsDirectory) are valid")
    exit(0)
}

do {
    let daemon = try Daemon(configuration: configuration, arguments: invocation.arguments, upgradeState: invocation.upgradeState)
    try daemon.run()
} catch let error as ConfigurationError {
    fail("invalid configuration: \(error)", status: ConfigurationError.exitStatus)
} catch {
    fail("\(error)", status: 1)
}
