import Foundation
import VoipdDaemon

let configuration: DaemonConfiguration
do {
    configuration = try DaemonCommandLine.parse(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
} catch let error as DaemonCommandLine.UsageError {
    if !error.description.isEmpty { FileHandle.standardError.write(Data("voipd: \(error.description)\n".utf8)) }
    FileHandle.standardError.write(Data((DaemonCommandLine.usage + "\n").utf8))
    exit(error.description.isEmpty ? 0 : 2)
}

do {
    let daemon = try Daemon(configuration: configuration)
    try daemon.run()
} catch {
    FileHandle.standardError.write(Data("<3>voipd: \(error)\n".utf8))
    exit(1)
}
