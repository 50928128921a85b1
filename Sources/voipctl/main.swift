import FoundationEssentials
import Glibc
import VoipClient
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
    let arguments = try ArgumentList(Array(CommandLine.arguments.dropFirst()))
    if arguments.flag("--version") {
        write(VoipdVersion.line(program: "voipctl"))
        return .ok
    }
    if let unknown = arguments.unknownVerb {
        guard unknown == "help" else { throw UsageFailure(message: "unknown verb \(unknown)") }
        write(Usage.general)
        return .ok
    }
    guard let verb = arguments.verb else {
        if arguments.flag("--help") {
            write(Usage.general)
            return .ok
        }
        throw UsageFailure(message: "")
    }
    if arguments.flag("--help") {
        write(Usage.verb(verb))
        return .ok
    }
    return try Commands(verb: verb.name, arguments: arguments).run()
}

let status: ExitStatus
do {
    status = try run()
} catch let failure as UsageFailure {
    if !failure.message.isEmpty { write("voipctl: \(failure.message)", to: 2) }
    write(failure.verb.flatMap(VerbTable.verb(named:)).map(Usage.verb) ?? Usage.general, to: 2)
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
