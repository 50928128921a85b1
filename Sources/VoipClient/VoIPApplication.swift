import FoundationEssentials
import Glibc
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// A lifecycle event received from voipd, to be acknowledged once handled.
public struct LifecycleEvent: Sendable, Equatable {
    public var id: UInt64
    public var kind: AppEventKind
    /// For voipSocketReadable.
    public var socket: SocketReadiness?
    /// For backgroundTransferEvents: the transfers' events (handed to the sessions'
    /// delegates by ``VoIPApplication/dispatch(_:)``).
    public var transfers: TransferEventsPayload?
    /// The app's state once this event is handled.
    public var state: AppState
    public var reason: String

    init(_ message: EventMessage) {
        id = message.event
        kind = message.kind
        transfers = message.transfers
        socket = message.socket.map {
            SocketReadiness(name: $0, bytesAvailable: message.bytesAvailable ?? 0, peerClosed: message.peerClosed ?? false,
                            connectionsWaiting: message.connectionsWaiting)
        }
        state = message.state
        reason = message.reason
    }
}

/// An identifier of a background task; ``invalid`` (0) when voipd refused one.
public struct BackgroundTaskIdentifier: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// UIBackgroundTaskInvalid.
    public static let invalid = BackgroundTaskIdentifier(rawValue: 0)
}

/// An app under voipd: the counterpart of UIApplication. Connect once at start; register
/// the sockets that must keep the app reachable while suspended; handle events with a
/// delegate (``processEvents(timeoutMilliseconds:)``) or one by one
/// (``nextEvent(timeoutMilliseconds:)``).
///
/// Use it from one thread. ``fileDescriptor`` becomes readable when an event waits, so it
/// fits in the app's own poll or epoll loop.
///
/// When voipd goes away (it crashed, or was restarted), the app goes on running and the
/// application reconnects by itself (``reconnection``), from the app's own event loop: it
/// says hello again, registers again the VoIP sockets it registered (it keeps a duplicate
/// of each), sets the keep-alive again and begins its open background tasks again, then
/// tells the delegate (``VoIPApplicationDelegate/applicationSupervisorDidBecomeAvailable(_:)``).
/// ``fileDescriptor`` stays the same descriptor throughout.
public final class VoIPApplication {
    public let name: String
    /// The control socket's path, resolved once: reconnections go to the same path.
    public let socketPath: String
    /// The connection to voipd now: nil while voipd is away, a new one after a reconnection.
    public internal(set) var connection: VoipdConnection?
    public weak var delegate: VoIPApplicationDelegate?
    /// The state voipd reported last.
    public internal(set) var state: AppState
    /// How voipd saw the app when it first connected (launched in the background by a
    /// relaunch, say).
    public let initialStatus: AppStatus
    /// How voipd saw the app when the current connection was made.
    public internal(set) var status: AppStatus
    /// How long one of the app's seconds lasts in real seconds (voipd's `--time-scale`; 1 in
    /// use): the keep-alive interval and `reachableFor` are in the app's seconds, a
    /// registrar's grant in real ones. As voipd said when the current connection was made.
    public internal(set) var timeScale: Double
    /// Whether, and how fast, to reconnect when voipd goes away.
    public var reconnection = ReconnectionPolicy()
    /// Why the last attempt to reconnect failed (nil once connected).
    public internal(set) var lastReconnectionError: Error?
    /// Set when willTerminate has been handled: the process should end now.
    public private(set) var terminationRequested = false

    /// What ``fileDescriptor`` is: an epoll instance holding the current connection and the
    /// timer of the next attempt to reconnect.
    let readiness: Epoll
    let retryTimer: TimerFd
    /// The delay before the next attempt after a failed one (nil: the next attempt is the
    /// first since the connection was lost).
    var retryDelay: Duration?
    /// The connection was lost and the delegate not told yet (it is told from the event
    /// loop, never from inside a request the app made).
    var lossToReport = false
    /// Events received on the current connection and not yet acknowledged: an
    /// acknowledgement meant for an earlier voipd must not reach the new one.
    var unacknowledged: Set<UInt64> = []
    /// Sockets voipd held for this app from an earlier run, handed back on connect: their
    /// places in `restoredDescriptors` by name.
    var restored: [String: Int] = [:]
    /// The sockets themselves, owned until the app takes them (closed with the application).
    let restoredDescriptors = DescriptorBag()
    /// The app's VoIP sockets by name: a duplicate of each, to register again with a voipd
    /// that restarted.
    var registrations: [String: DescriptorBox] = [:]
    /// Open background tasks by the identifier the app was given.
    var tasks: [BackgroundTaskIdentifier: BackgroundTask] = [:]
    private var nextTaskID: UInt64 = 1
    var keepAlive: (seconds: Double, reachableFor: Double?, handler: () -> Void)?
    /// Background sessions opened in this process, by identifier.
    var sessions: [String: BackgroundSession] = [:]
    /// Whether the app's audio session is active: it is in a call (``setAudioSessionActive(_:)``).
    public internal(set) var isAudioSessionActive = false

    /// A background task as the app sees it, and voipd's number for it on the current
    /// connection (nil: none yet, voipd is away or refused it).
    struct BackgroundTask {
        var name: String
        var daemonID: UInt64?
        var expirationHandler: (() -> Void)?
    }

    enum Token {
        static let connection: UInt64 = 1
        static let retry: UInt64 = 2
    }

    /// Connects and identifies the app. `name` defaults to `$VOIPD_APP_NAME` (set by voipd
    /// for the programs it launches); the socket path resolves as voipd's does. A voipd
    /// that is not running is an error here (only a connection once made is made again).
    public init(name: String? = nil, socketPath: String? = nil) throws {
        guard let appName = name ?? environmentVariable(LaunchEnvironment.appName) else {
            throw VoipdError.unexpected("no app name: pass one or set \(LaunchEnvironment.appName)")
        }
        self.name = appName
        readiness = try Epoll(maxEventsPerWait: 4)
        retryTimer = try TimerFd()
        try readiness.add(retryTimer.descriptor, events: .readable, token: Token.retry)
        let connection = try VoipdConnection(socketPath: socketPath)
        self.socketPath = connection.socketPath
        let (result, descriptors) = try connection.request(.hello, { HelloRequest(id: $0, name: appName) }, expecting: HelloResult.self)
        try readiness.add(connection.descriptor, events: .readable, token: Token.connection)
        self.connection = connection
        initialStatus = result.app
        status = result.app
        timeScale = result.timeScale ?? 1
        state = result.app.state
        _ = takeHandedBack(result.sockets, descriptors)
    }

    /// Readable when voipd has sent something, or when it is time to try reconnecting: put
    /// it in the app's poll or epoll loop, and call ``processEvents(timeoutMilliseconds:)``
    /// or ``nextEvent(timeoutMilliseconds:)`` when it is. The same descriptor for the
    /// application's life, whatever happens to voipd.
    public var fileDescriptor: CInt { readiness.descriptor.rawValue }

    /// Whether events already received wait in this process (poll would not show them):
    /// handle them before waiting on ``fileDescriptor``.
    public var hasBufferedMessages: Bool { connection?.hasBufferedMessages ?? false }

    /// Whether voipd is connected now.
    public var isConnected: Bool { connection != nil }

    // MARK: - VoIP sockets

    /// Registers a connected socket as a VoIP socket under `name`: voipd keeps a duplicate,
    /// watches it while the app is suspended, and never reclaims it. The app keeps its own
    /// descriptor (and may close it). The application keeps a duplicate too, to register the
    /// socket again with a voipd that restarted; while voipd is away, the socket is kept and
    /// registered once it is back.
    public func registerVoIPSocket(_ fd: CInt, name: String) throws {
        guard registrations[name] == nil else {
            throw VoipdError.refused(ProtocolError(.duplicateName, "\(self.name) already has a VoIP socket named \(name)"))
        }
        let copy = DescriptorBox(try FileDescriptor(duplicating: fd))
        if connection != nil {
            do {
                _ = try socketRequest(.registerSocket, name: name, descriptors: [fd])
            } catch VoipdError.disconnected where reconnection.isEnabled {
                // Registered when voipd is back.
            }
        }
        registrations[name] = copy
    }

    /// Stops holding the socket; voipd closes its duplicate, and the application its own.
    public func unregisterVoIPSocket(name: String) throws {
        registrations[name] = nil
        guard connection != nil else { return }
        do {
            _ = try socketRequest(.unregisterSocket, name: name)
        } catch VoipdError.disconnected where reconnection.isEnabled {
            // The next voipd never hears of it.
        }
    }

    /// A duplicate of the held socket `name`, owned by the caller (from the application's
    /// own duplicate while voipd is away).
    public func retrieveVoIPSocket(name: String) throws -> FileDescriptor {
        if connection != nil {
            do {
                let (_, descriptors) = try socketRequest(.retrieveSocket, name: name)
                guard let fd = descriptors.take(0) else { throw VoipdError.unexpected("retrieveSocket reply without a descriptor") }
                return fd
            } catch VoipdError.disconnected where reconnection.isEnabled {
                // Served from the application's duplicate below.
            }
        }
        guard let copy = registrations[name] else { throw VoipdError.disconnected }
        return try copy.descriptor.duplicate()
    }

    /// The names of the VoIP sockets the application registered (and registers again after
    /// voipd restarts), sorted.
    public var registeredVoIPSocketNames: [String] { registrations.keys.sorted() }

    /// A socket voipd handed back at connect (held for an earlier run of the app), by name.
    /// Ownership passes to the caller; a second call for the same name returns nil.
    public func takeRestoredSocket(named name: String) -> FileDescriptor? {
        guard let index = restored.removeValue(forKey: name) else { return nil }
        return restoredDescriptors.take(index)
    }

    /// Names of the sockets handed back at connect and not yet taken.
    public var restoredSocketNames: [String] { restored.keys.sorted() }

    // MARK: - Background tasks and keep-alive

    /// Asks for time to finish work in the background. ``BackgroundTaskIdentifier/invalid``
    /// when the budget is spent. The handler runs (from ``processEvents(timeoutMilliseconds:)``)
    /// shortly before the budget ends; the task must be ended by then or the app is killed.
    /// While voipd is away the task is granted here (nothing can suspend the app), and
    /// asked of voipd once it is back.
    public func beginBackgroundTask(name: String = "task", expirationHandler: (() -> Void)? = nil) throws -> BackgroundTaskIdentifier {
        var daemonID: UInt64?
        if connection != nil {
            do {
                let (result, _) = try request(.beginBackgroundTask, { BeginBackgroundTaskRequest(id: $0, name: name) },
                                              expecting: BackgroundTaskResult.self)
                guard result.task != 0 else { return .invalid }
                daemonID = result.task
            } catch VoipdError.disconnected where reconnection.isEnabled {
                // Asked again when voipd is back.
            }
        }
        let id = BackgroundTaskIdentifier(rawValue: nextTaskID)
        nextTaskID += 1
        tasks[id] = BackgroundTask(name: name, daemonID: daemonID, expirationHandler: expirationHandler)
        return id
    }

    /// Ends a background task; with the last one ended in the background, the app is
    /// suspended at once.
    public func endBackgroundTask(_ id: BackgroundTaskIdentifier) throws {
        guard let task = tasks.removeValue(forKey: id), let daemonID = task.daemonID, connection != nil else { return }
        do {
            _ = try request(.endBackgroundTask, { EndBackgroundTaskRequest(id: $0, task: daemonID) }, expecting: EmptyResult.self)
        } catch VoipdError.disconnected where reconnection.isEnabled {
            // The next voipd never hears of it.
        }
    }

    /// The shortest keep-alive interval voipd permits this app, in seconds, as UIKit's
    /// `UIMinimumKeepAliveTimeout`: 600 unless the app's manifest or voipd's configuration
    /// lowers it (for a registrar that grants less than 600 s covers). As voipd said when
    /// the current connection was made.
    public var minimumKeepAliveTimeout: Double { status.keepAliveMinimumSeconds ?? 600 }

    /// Wakes the app every `seconds` (at least ``minimumKeepAliveTimeout``, 600 as on iOS)
    /// while it is in the background; the handler has 10 s. Set again on a voipd that
    /// restarted.
    ///
    /// `reachableFor`, when the app knows it, is how long it stays reachable without a wake
    /// (a SIP phone: what its registrar's grant leaves after its last refresh): when the
    /// keep-alive cannot wake it that often, voipd says so in its log and `voipctl status`.
    public func setKeepAliveTimeout(_ seconds: Double, reachableFor: Double? = nil, handler: @escaping () -> Void) throws {
        if connection != nil {
            do {
                _ = try request(.setKeepAliveTimeout, { SetKeepAliveRequest(id: $0, seconds: seconds, reachableFor: reachableFor) },
                                expecting: EmptyResult.self)
            } catch VoipdError.disconnected where reconnection.isEnabled {
                // Set when voipd is back.
            }
        }
        keepAlive = (seconds, reachableFor, handler)
    }

    /// Says a call began (true) or ended (false), as AVAudioSession's `setActive(_:)`: while
    /// the audio session is active the app is not suspended in the background and no budget
    /// runs out; when it ends, the background rules apply again (with no background task
    /// open, the app is suspended at once). Refused (``VoipdError`` `permissionDenied`) when
    /// the app's manifest says `"calls": false`. Set again on a voipd that restarted.
    public func setAudioSessionActive(_ active: Bool) throws {
        if connection != nil {
            do {
                _ = try request(.setAudioSessionActive, { SetAudioSessionActiveRequest(id: $0, active: active) }, expecting: EmptyResult.self)
            } catch VoipdError.disconnected where reconnection.isEnabled {
                // Set when voipd is back.
            }
        }
        isAudioSessionActive = active
    }

    public func clearKeepAliveTimeout() throws {
        keepAlive = nil
        guard connection != nil else { return }
        do {
            _ = try request(.setKeepAliveTimeout, { SetKeepAliveRequest(id: $0, seconds: nil) }, expecting: EmptyResult.self)
        } catch VoipdError.disconnected where reconnection.isEnabled {
            // The next voipd never hears of it.
        }
    }

    // MARK: - Events

    /// The next event, within the timeout (nil when none came; a negative timeout waits
    /// forever). The caller must ``acknowledge(_:)`` it once handled. Reconnections happen
    /// here, as the timeout allows; with ``ReconnectionPolicy/isEnabled`` false, a closed
    /// connection throws ``VoipdError/disconnected`` instead.
    public func nextEvent(timeoutMilliseconds: Int32) throws -> LifecycleEvent? {
        let deadline = timeoutMilliseconds < 0 ? nil : MonotonicInstant.now + .milliseconds(timeoutMilliseconds)
        while true {
            if let event = try lookForEvent() { return event }
            if let deadline, MonotonicInstant.now >= deadline { return nil }
            do {
                _ = try waitReadable(readiness.descriptor, timeoutMilliseconds: pollTimeout(until: deadline))
            } catch {
                throw VoipdError.system(error)
            }
        }
    }

    /// An event already here, without waiting; on the way, tells the delegate of a lost
    /// connection and reconnects when it is time to.
    private func lookForEvent() throws -> LifecycleEvent? {
        while true {
            if lossToReport {
                lossToReport = false
                delegate?.applicationSupervisorDidBecomeUnavailable(self)
            }
            if let connection {
                do {
                    while let message = try connection.nextUnsolicited(timeoutMilliseconds: 0) {
                        if case .transferProgress(let progress) = message { dispatchTransferProgress(progress) }
                        guard case .event(let body) = message else { continue }
                        let event = LifecycleEvent(body)
                        state = event.state
                        unacknowledged.insert(event.id)
                        return event
                    }
                    return nil
                } catch VoipdError.disconnected where reconnection.isEnabled {
                    connectionLost()
                    continue
                }
            }
            guard case .processed = try retryTimer.acknowledge() else { return nil }
            reconnect()
        }
    }

    /// Tells voipd the event is handled.
    public func acknowledge(_ event: LifecycleEvent) throws {
        try acknowledge(eventID: event.id)
    }

    /// Tells voipd the event with this id is handled. An event of a voipd that has gone
    /// since is not acknowledged to the new one.
    public func acknowledge(eventID: UInt64) throws {
        guard let connection, unacknowledged.remove(eventID) != nil else { return }
        do {
            try connection.post(.acknowledge, AcknowledgeMessage(event: eventID))
        } catch VoipdError.disconnected where reconnection.isEnabled {
            connectionLost()
        }
    }

    /// Handles every event that arrives within the timeout: calls the delegate (or the
    /// keep-alive and expiration handlers), then acknowledges. Returns how many were handled.
    @discardableResult
    public func processEvents(timeoutMilliseconds: Int32 = 0) throws -> Int {
        var handled = 0
        var wait = timeoutMilliseconds
        while let event = try nextEvent(timeoutMilliseconds: wait) {
            dispatch(event)
            try acknowledge(event)
            handled += 1
            wait = 0
            if terminationRequested { break }
        }
        return handled
    }

    /// Runs the keep-alive or expiration handlers an event calls for.
    func runHandlers(for event: LifecycleEvent) {
        switch event.kind {
        case .keepAlive: keepAlive?.handler()
        case .backgroundTaskWillExpire: for task in tasks.values { task.expirationHandler?() }
        case .willTerminate: terminationRequested = true
        default: break
        }
    }

    /// Calls the delegate method or handler for an event (without acknowledging it).
    public func dispatch(_ event: LifecycleEvent) {
        switch event.kind {
        case .willResignActive: delegate?.applicationWillResignActive(self)
        case .didEnterBackground: delegate?.applicationDidEnterBackground(self)
        case .willEnterForeground: delegate?.applicationWillEnterForeground(self)
        case .didBecomeActive: delegate?.applicationDidBecomeActive(self)
        case .willTerminate: delegate?.applicationWillTerminate(self)
        case .voipSocketReadable:
            if let readiness = event.socket { delegate?.application(self, voipSocketReadable: readiness) }
        case .backgroundTransferEvents:
            if let transfers = event.transfers { dispatchTransferEvents(transfers) }
        case .keepAlive, .backgroundTaskWillExpire: break
        }
        runHandlers(for: event)
    }

    /// A request on the current connection; a closed connection is noted as lost (and the
    /// error thrown).
    func request<Body: Encodable, Result: Codable & Sendable>(
        _ type: MessageType, _ makeBody: (UInt64) -> Body, descriptors: [CInt] = [], expecting: Result.Type
    ) throws -> (Result, DescriptorBag) {
        try onConnection { try $0.request(type, makeBody, descriptors: descriptors, expecting: expecting) }
    }

    /// A held socket's request (``VoipdConnection/socketRequest(_:name:descriptors:)``), as
    /// ``request(_:_:descriptors:expecting:)`` makes one.
    func socketRequest(_ type: MessageType, name: String, descriptors: [CInt] = []) throws -> (HeldSocketStatus, DescriptorBag) {
        try onConnection { try $0.socketRequest(type, name: name, descriptors: descriptors) }
    }

    private func onConnection<Result>(_ exchange: (VoipdConnection) throws -> Result) throws -> Result {
        guard let connection else { throw VoipdError.disconnected }
        do {
            return try exchange(connection)
        } catch VoipdError.disconnected where reconnection.isEnabled {
            connectionLost()
            throw VoipdError.disconnected
        }
    }
}
