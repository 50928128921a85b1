import Foundation
import Glibc
import VoipClient
import VoipdLifecycle
import VoipdProtocol

/// Exit statuses scripts can rely on.
enum ExitStatus: Int32 {
    case ok = 0, failure = 1, usage = 2, notFound = 3
}

struct UsageFailure: Error {
    var message: String
    var verb: String?
}

func write(_ text: String, to fd: Int32 = 1) {
    var bytes = Array((text.hasSuffix("\n") ? text : text + "\n").utf8)
    bytes.withUnsafeMutableBytes { raw in
        var offset = 0
        while offset < raw.count {
            let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
            if n <= 0 { return }
            offset += n
        }
    }
}

func run() throws -> ExitStatus {
    let arguments = ArgumentList(Array(CommandLine.arguments.dropFirst()))
    let socketPath = try arguments.option("--socket")
    let json = arguments.flag("--json")
    guard let verb = arguments.remaining.first else { throw UsageFailure(message: "") }
    arguments.remaining.removeFirst()
    if verb == "--help" || verb == "-h" || verb == "help" {
        write(Usage.general)
        return .ok
    }
    guard let help = Usage.verb(verb) else { throw UsageFailure(message: "unknown verb \(verb)") }
    if arguments.flag("--help", "-h") {
        write(help)
        return .ok
    }
    return try Commands(verb: verb, arguments: arguments, socketPath: socketPath, json: json).run()
}

let status: ExitStatus
do {
    status = try run()
} catch let failure as UsageFailure {
    if !failure.message.isEmpty { write("voipctl: \(failure.message)", to: 2) }
    write(failure.verb.flatMap(Usage.verb) ?? Usage.general, to: 2)
    status = failure.message.isEmpty ? .ok : .usage
} catch let error as VoipdError {
    write("voipctl: \(error)", to: 2)
    switch error {
    case .daemonNotRunning: status = .notFound
    case .refused(let refusal) where refusal.code == .noSuchApp: status = .notFound
    default: status = .failure
    }
} catch {
    write("voipctl: \(error)", to: 2)
    status = .failure
}
exit(status.rawValue)
