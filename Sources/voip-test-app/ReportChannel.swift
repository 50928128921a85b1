import Foundation
import Glibc
import TestAppMessages
import VoipdSystem

/// The line of JSON objects between the test app and the test that drives it: reports go
/// out, commands come in. A Unix socket, so socket reclaim never touches it.
final class ReportChannel {
    let descriptor: FileDescriptor
    private var pending: [UInt8] = []
    private let encoder = JSONEncoder()
    private let decoder = JSONDecoder()

    init(path: String) throws {
        descriptor = try Socket.connectUnix(path: path, type: Socket.streamType)
        encoder.outputFormatting = [.sortedKeys]
    }

    func report(_ report: TestAppReport) {
        guard var data = try? encoder.encode(report) else { return }
        data.append(0x0a)
        // Also on stderr (voipd's log, under a test): a post-mortem shows what the app said.
        _ = data.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
        do {
            try descriptor.writeAll(Array(data))
        } catch {
            // The test has gone: nobody is left to tell.
        }
    }

    /// Commands that have arrived whole; nil when the test closed its end. A line that is
    /// not a command is answered with an error report.
    func readCommands() -> [TestAppCommand]? {
        guard let bytes = try? descriptor.read(upTo: 65536), !bytes.isEmpty else { return nil }
        pending += bytes
        var commands: [TestAppCommand] = []
        while let newline = pending.firstIndex(of: 0x0a) {
            let line = Data(pending[..<newline])
            pending.removeSubrange(...newline)
            do {
                commands.append(try decoder.decode(TestAppCommand.self, from: line))
            } catch {
                report(.error(message: "not a command: \(String(decoding: line, as: UTF8.self)): \(error)"))
            }
        }
        return commands
    }
}
