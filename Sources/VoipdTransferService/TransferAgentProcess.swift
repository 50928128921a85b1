import FoundationEssentials
import Glibc
import VoipdSystem
import VoipdTransfers

/// One running agent as voipd sees it: the process (by pidfd) and voipd's end of its
/// socket, non-blocking. Commands that do not fit in the socket wait in a queue, sent when
/// it is writable; voipd never blocks on an agent.
final class TransferAgentProcess {
    /// The account the agent runs as (its key among the agents).
    let uid: uid_t
    let process: PidFd
    private(set) var socket: FileDescriptor?
    let socketToken: UInt64
    let processToken: UInt64
    /// Attempts sent to it that it has not reported ended, by task.
    var attempts: [TransferTaskID: Int] = [:]
    /// The agent said it is ready, with its pid and uid.
    var ready = false
    /// When it last had nothing to do.
    var idleSince: Date?
    private var outbox: [[UInt8]] = []
    private let encoder = JSONEncoder()
    private let decoder = JSONDecoder()

    /// The most commands waiting for an agent that does not read; beyond it the agent is
    /// taken for stuck.
    static let maximumQueuedCommands = 4096

    init(launcher: TransferAgentLauncher, credentials: SpawnCredentials?, socketToken: UInt64, processToken: UInt64) throws {
        let pair = try Socket.pair(type: Socket.seqpacketType)
        let parentEnd = pair.first
        let childEnd = pair.second
        try parentEnd.setNonBlocking()
        process = try spawn(launcher.spawnRequest(socket: childEnd.rawValue, credentials: credentials))
        try childEnd.close()
        socket = .some(parentEnd)
        uid = credentials?.uid ?? geteuid()
        self.socketToken = socketToken
        self.processToken = processToken
    }

    var hasQueuedOutput: Bool { !outbox.isEmpty }

    /// Whether voipd's end of the socket is open.
    var isSocketOpen: Bool { socket != nil }

    /// Lends voipd's end of the socket to `body`, while it is open.
    func withSocket(_ body: (borrowing FileDescriptor) -> Void) {
        switch socket {
        case .some(let socket): body(socket)
        case .none: return
        }
    }

    /// A command as its packet. Throws when it does not fit in one frame: an app's request
    /// within its bounds can still outgrow one once JSON escapes its quotes and slashes.
    func packet(for command: AgentCommand) throws -> [UInt8] {
        try AgentFrame.encode(command, type: AgentFrame.commandType, encoder: encoder)
    }

    /// Queues a command's packet and sends what the socket takes. False when the agent cannot
    /// take it (gone, or stuck with a full queue).
    func send(_ packet: [UInt8]) -> Bool {
        guard socket != nil else { return false }
        outbox.append(packet)
        guard outbox.count <= Self.maximumQueuedCommands else { return false }
        return flush()
    }

    /// Sends queued commands until the socket is full. False when the agent is gone.
    @discardableResult
    func flush() -> Bool {
        switch socket {
        case .none:
            return false
        case .some(let socket):
            while let packet = outbox.first {
                do {
                    guard case .processed = try Socket.send(socket, bytes: packet) else { return true }
                    outbox.removeFirst()
                } catch {
                    return false
                }
            }
            return true
        }
    }

    /// Reports waiting on the socket, at most `limit` (so one busy agent cannot hold the
    /// loop). Throws when the agent sent something that is not a report; nil at end of stream.
    func receive(limit: Int = 64) throws -> [AgentReport]? {
        var reports: [AgentReport] = []
        while reports.count < limit {
            let received: IOResult<ReceivedMessage>
            switch socket {
            case .none: return nil
            case .some(let socket): received = try Socket.receive(socket, maxBytes: AgentFrame.maximumSize + 1, maxDescriptors: 1)
            }
            guard case .processed(let message) = received else { break }
            if message.isEndOfStream { return reports.isEmpty ? nil : reports }
            message.descriptors.closeAll()
            reports.append(try AgentFrame.decode(AgentReport.self, type: AgentFrame.reportType, packet: message.bytes,
                                                 length: message.length, decoder: decoder))
        }
        return reports
    }

    /// Closes voipd's end: the agent ends when it sees it (its partial files stay).
    func closeSocket() {
        socket = nil
        outbox = []
    }
}
