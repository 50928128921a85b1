import Foundation
import VoipdSystem
import VoipdTransfers

/// The agent's end of its socket to voipd (descriptor 3, `SOCK_SEQPACKET`): commands in on
/// the main thread, reports out from the agent's queue. Sends block: a parent that does not
/// read holds the agent back, and never the other way round (voipd's end does not block).
final class ParentChannel: @unchecked Sendable {
    let descriptor: FileDescriptor
    private let encoder = JSONEncoder()
    private let decoder = JSONDecoder()
    private let sendLock = NSLock()

    init(descriptor: consuming FileDescriptor) {
        self.descriptor = descriptor
    }

    /// Sends a report. A parent that has gone away ends the agent: nobody is left to tell.
    func send(_ report: AgentReport) {
        sendLock.lock()
        defer { sendLock.unlock() }
        do {
            // The socket blocks: a full buffer waits for voipd to read.
            guard case .processed = try Socket.send(descriptor, bytes: AgentFrame.encode(report, type: AgentFrame.reportType, encoder: encoder)) else {
                throw Errno.wouldBlock
            }
        } catch let error as Errno where error == .brokenPipe || error == .connectionReset {
            exit(0)
        } catch {
            Log.error("cannot send a report: \(error)")
            exit(1)
        }
    }

    /// The next command; nil when voipd has closed the socket.
    func receive() throws -> AgentCommand? {
        while true {
            guard case .processed(let message) = try Socket.receive(descriptor, maxBytes: AgentFrame.maximumSize + 1, maxDescriptors: 1) else { continue }
            if message.isEndOfStream { return nil }
            message.descriptors.closeAll()
            return try AgentFrame.decode(AgentCommand.self, type: AgentFrame.commandType, packet: message.bytes,
                                         length: message.length, decoder: decoder)
        }
    }
}

/// Diagnostics on standard error (voipd passes its own, so they reach its journal).
enum Log {
    static func error(_ message: String) {
        FileHandle.standardError.write(Data("voipd-transfer[\(getpid())]: \(message)\n".utf8))
    }
}
