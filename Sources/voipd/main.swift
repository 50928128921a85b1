import Foundation
import Glibc
import VoipdDaemon
import VoipdProtocol
import VoipdSystem

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("<3>voipd: \(message)\n".utf8))
    exit(status)
}

var arguments = Array(CommandLine.arguments.dropFirst())

let invocation: DaemonCommandLine.Invocation
do {
    invocation = try DaemonCommandLine.parse(arguments)
} catch let error as DaemonCommandLine.UsageError {
    if !error.description.isEmpty { FileHandle.standardError.write(Data("voipd: \(error.description)\n".utf8)) }
    FileHandle.standardError.write(Data((DaemonCommandLine.usage + "\n").utf8))
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
    for error in errors { FileHandle.standardError.write(Data("<3>voipd: invalid manifest: \(error)\n".utf8)) }
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
