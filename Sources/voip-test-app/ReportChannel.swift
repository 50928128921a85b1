import Foundation
import Glibc
import VoipdSystem

/// The line of JSON objects between the test app and the test that drives it: reports go
/// out, commands come in. A Unix socket, so socket reclaim never touches it.
final class ReportChannel {
    let descriptor: FileDescriptor
    private var pending: [UInt8] = []

    init(path: String) throws {
        descriptor = try Socket.connectUnix(path: path, type: Socket.streamType)
    }

    func report(_ fields: [String: Any]) {
        guard var data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else { return }
        data.append(0x0a)
        // Also on stderr (voipd's log, under a test): a post-mortem shows what the app said.
        _ = data.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
        try? descriptor.writeAll(Array(data))
    }

    /// Commands that have arrived whole; nil when the test closed its end.
    func readCommands() -> [[String: Any]]? {
        guard let bytes = try? descriptor.read(upTo: 65536), !bytes.isEmpty else { return nil }
        pending += bytes
        var commands: [[String: Any]] = []
        while let newline = pending.firstIndex(of: 0x0a) {
            let line = Data(pending[..<newline])
            pending.removeSubrange(...newline)
            if let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] { commands.append(object) }
        }
        return commands
    }
}
