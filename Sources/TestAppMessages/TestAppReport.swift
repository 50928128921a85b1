import VoipdVocabulary

/// What the test app tells the test, one JSON object a line: what voipd told it and what
/// came of the test's commands.
public enum TestAppReport: Codable, Equatable, Sendable {
    /// Connected to voipd; `restored`: the sockets voipd handed back (held for the app's
    /// name before it connected).
    case hello(pid: Int32, state: AppState, restored: [String])
    /// voipd went away (or closed the connection).
    case disconnected
    /// voipd came back: the app's own VoIP sockets registered again, and those voipd handed back.
    case reconnected(pid: Int32, state: AppState, registered: [String], restored: [String])
    /// voipd refused to take a socket back after it came back.
    case registrationRefused(socket: String, message: String)
    /// A lifecycle event from voipd announcing `state`; `socket`: what woke the app, for
    /// voipSocketReadable; `acknowledged`: whether the app acknowledges it (not under `--no-ack`).
    case event(id: UInt64, kind: AppEventKind, state: AppState, socket: SocketReadiness?, acknowledged: Bool)
    case registered(socket: String)
    case connected(socket: String)
    case listening(socket: String, port: UInt16)
    case unregistered(socket: String)
    case retrieved(socket: String, sameSocket: Bool)
    case closed(socket: String)
    case read(socket: String, outcome: ReadOutcome)
    /// How many bytes `send` took, or its errno.
    case wrote(socket: String, bytes: Int, errno: Int32?)
    /// `errno`: nil when a connection was accepted.
    case accepted(socket: String, errno: Int32?)
    /// A background task began; id 0 when voipd refused it.
    case task(name: String, id: UInt64)
    case taskEnded(id: UInt64)
    /// A background task's expiration handler ran.
    case expiring(name: String)
    case keepAliveSet
    case keepAliveRefused(message: String)
    /// The audio session is active (true) or not, as voipd accepted; or its refusal.
    case audioSession(active: Bool)
    case audioSessionRefused(message: String)
    /// The keep-alive handler ran.
    case keepAliveHandler
    /// The memory the app holds on purpose now.
    case allocated(megabytes: Int)
    /// The memory filled with ``MemoryPattern``, and the checksum over it as written.
    case memoryFilled(megabytes: Int, checksum: UInt64)
    /// The checksum over the filled memory as it reads now.
    case memoryChecksum(UInt64)
    /// A background session is open, with these tasks voipd has for it.
    case sessionOpened(session: String, tasks: [UInt64])
    case transferCreated(session: String, task: UInt64)
    /// A task's completion, handed over in a `backgroundTransferEvents` event: its HTTP
    /// status, and its error if it failed.
    case transferCompleted(session: String, task: UInt64, status: Int?, error: String?)
    /// A task's progress, as a `transferProgress` frame brought it to the running app.
    case transferProgress(session: String, task: UInt64, received: Int64, expected: Int64?, sent: Int64)
    /// A challenge (a 401), and whether the app answered it with a credential.
    case transferChallenged(session: String, task: UInt64, answered: Bool)
    case error(message: String)

    public enum ReadOutcome: Codable, Equatable, Sendable {
        case data(String)
        case endOfFile
        case failed(errno: Int32)

        /// The bytes read, as text; nil at the end of the stream or on an error.
        public var data: String? {
            if case .data(let text) = self { return text }
            return nil
        }
    }

    public typealias Hello = (pid: Int32, state: AppState, restored: [String])
    public typealias Reconnection = (pid: Int32, state: AppState, registered: [String], restored: [String])
    public typealias Event = (id: UInt64, kind: AppEventKind, state: AppState, socket: SocketReadiness?, acknowledged: Bool)
}

/// Each report's content, nil for the other kinds: `app.expect(\.taskID)` waits for a
/// `task` report and returns its id.
extension TestAppReport {
    public var hello: Hello? {
        guard case .hello(let pid, let state, let restored) = self else { return nil }
        return (pid, state, restored)
    }

    public var reconnection: Reconnection? {
        guard case .reconnected(let pid, let state, let registered, let restored) = self else { return nil }
        return (pid, state, registered, restored)
    }

    public var event: Event? {
        guard case .event(let id, let kind, let state, let socket, let acknowledged) = self else { return nil }
        return (id, kind, state, socket, acknowledged)
    }

    /// `read`: the socket and what came of the read.
    public var read: (socket: String, outcome: ReadOutcome)? {
        guard case .read(let socket, let outcome) = self else { return nil }
        return (socket, outcome)
    }

    public var listeningPort: UInt16? {
        guard case .listening(_, let port) = self else { return nil }
        return port
    }

    /// `retrieved`: whether the copy is the app's own socket.
    public var retrievedSameSocket: Bool? {
        guard case .retrieved(_, let same) = self else { return nil }
        return same
    }

    /// `wrote`: the errno of the write (0 when it did not fail).
    public var writeErrno: Int32? {
        guard case .wrote(_, _, let errno) = self else { return nil }
        return errno ?? 0
    }

    public var sessionOpened: (session: String, tasks: [UInt64])? {
        guard case .sessionOpened(let session, let tasks) = self else { return nil }
        return (session, tasks)
    }

    public var transferCreated: (session: String, task: UInt64)? {
        guard case .transferCreated(let session, let task) = self else { return nil }
        return (session, task)
    }

    public var taskID: UInt64? {
        guard case .task(_, let id) = self else { return nil }
        return id
    }

    /// `allocated`: the memory held on purpose now, in megabytes.
    public var allocatedMegabytes: Int? {
        guard case .allocated(let megabytes) = self else { return nil }
        return megabytes
    }

    /// `memoryFilled`: how much, and the checksum over the memory as written.
    public var filledMemory: (megabytes: Int, checksum: UInt64)? {
        guard case .memoryFilled(let megabytes, let checksum) = self else { return nil }
        return (megabytes, checksum)
    }

    /// `memoryChecksum`: the checksum over the memory as it reads now.
    public var memoryChecksum: UInt64? {
        guard case .memoryChecksum(let checksum) = self else { return nil }
        return checksum
    }

    public var audioSessionRefusal: String? {
        guard case .audioSessionRefused(let message) = self else { return nil }
        return message
    }

    public var keepAliveRefusal: String? {
        guard case .keepAliveRefused(let message) = self else { return nil }
        return message
    }

    public var errorMessage: String? {
        guard case .error(let message) = self else { return nil }
        return message
    }
}
