import Foundation
import Glibc
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem

/// A lifecycle event received from voipd, to be acknowledged once handled.
public struct LifecycleEvent: Sendable, Equatable {
    public var id: UInt64
    public var kind: AppEventKind
    /// For voipSocketReadable.
    public var socket: SocketReadiness?
    /// The app's state once this event is handled.
    public var state: AppState
    public var reason: String

    init(_ message: EventMessage) {
        id = message.event
        kind = message.kind
        socket = message.socket.map {
            SocketReadiness(name: $0, bytesAvailable: message.bytesAvailable ?? 0, peerClosed: message.peerClosed ?? false)
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
/// delegate (``processEvents(timeout:)``) or one by one (``nextEvent(timeout:)``).
///
/// Use it from one thread. ``fileDescriptor`` becomes readable when an event waits, so it
/// fits in the app's own poll or epoll loop.
public final class VoIPApplication {
    public let name: String
    public let connection: VoipdConnection
    public weak var delegate: VoIPApplicationDelegate?
    /// The state voipd reported last.
    public private(set) var state: AppState
    /// How voipd saw the app when it connected (launched in the background by a relaunch,
    /// say).
    public let initialStatus: AppStatus
    /// Sockets voipd held for this app from an earlier run, handed back on connect.
    private var restored: [String: CInt]
    private var expirationHandlers: [BackgroundTaskIdentifier: () -> Void] = [:]
    private var keepAliveHandler: (() -> Void)?
    /// Set when willTerminate has been handled: the process should end now.
    public private(set) var terminationRequested = false

    /// Connects and identifies the app. `name` defaults to `$VOIPD_APP_NAME` (set by voipd
    /// for the programs it launches); the socket path resolves as voipd's does.
    public init(name: String? = nil, socketPath: String? = nil) throws {
        let environment = ProcessInfo.processInfo.environment
        guard let appName = name ?? environment[LaunchEnvironment.appName] else {
            throw VoipdError.unexpected("no app name: pass one or set \(LaunchEnvironment.appName)")
        }
        self.name = appName
        connection = try VoipdConnection(socketPath: socketPath)
        let (result, descriptors) = try connection.request(.hello, { HelloRequest(id: $0, name: appName) }, expecting: HelloResult.self)
        var handedBack: [String: CInt] = [:]
        for (index, socketName) in result.sockets.enumerated() {
            if let fd = descriptors.take(index) { handedBack[socketName] = fd.release() }
        }
        descriptors.closeAll()
        restored = handedBack
        initialStatus = result.app
        state = result.app.state
    }

    deinit {
        for fd in restored.values { close(fd) }
    }

    /// Readable when voipd has sent something: put it in the app's poll loop.
    public var fileDescriptor: CInt { connection.descriptor.rawValue }

    // MARK: - VoIP sockets

    /// Registers a connected socket as a VoIP socket under `name`: voipd keeps a duplicate,
    /// watches it while the app is suspended, and never reclaims it. The app keeps its own
    /// descriptor (and may close it).
    public func registerVoIPSocket(_ fd: CInt, name: String) throws {
        _ = try connection.request(.registerSocket, { SocketNameRequest(id: $0, name: name) }, descriptors: [fd], expecting: SocketResult.self)
    }

    /// Stops holding the socket; voipd closes its duplicate.
    public func unregisterVoIPSocket(name: String) throws {
        _ = try connection.request(.unregisterSocket, { SocketNameRequest(id: $0, name: name) }, expecting: SocketResult.self)
    }

    /// A duplicate of the held socket `name`, owned by the caller.
    public func retrieveVoIPSocket(name: String) throws -> FileDescriptor {
        let (_, descriptors) = try connection.request(.retrieveSocket, { SocketNameRequest(id: $0, name: name) }, expecting: SocketResult.self)
        guard let fd = descriptors.take(0) else { throw VoipdError.unexpected("retrieveSocket reply without a descriptor") }
        return fd
    }

    /// A socket voipd handed back at connect (held for an earlier run of the app), by name.
    /// Ownership passes to the caller; a second call for the same name returns nil.
    public func takeRestoredSocket(named name: String) -> FileDescriptor? {
        guard let fd = restored.removeValue(forKey: name) else { return nil }
        return FileDescriptor(adopting: fd)
    }

    /// Names of the sockets handed back at connect and not yet taken.
    public var restoredSocketNames: [String] { restored.keys.sorted() }

    // MARK: - Background tasks and keep-alive

    /// Asks for time to finish work in the background. ``BackgroundTaskIdentifier/invalid``
    /// when the budget is spent. The handler runs (from ``processEvents(timeout:)``) shortly
    /// before the budget ends; the task must be ended by then or the app is killed.
    public func beginBackgroundTask(name: String = "task", expirationHandler: (() -> Void)? = nil) throws -> BackgroundTaskIdentifier {
        let (result, _) = try connection.request(.beginBackgroundTask, { BeginBackgroundTaskRequest(id: $0, name: name) }, expecting: BackgroundTaskResult.self)
        let id = BackgroundTaskIdentifier(rawValue: result.task)
        if id != .invalid, let expirationHandler { expirationHandlers[id] = expirationHandler }
        return id
    }

    /// Ends a background task; with the last one ended in the background, the app is
    /// suspended at once.
    public func endBackgroundTask(_ id: BackgroundTaskIdentifier) throws {
        guard id != .invalid else { return }
        expirationHandlers[id] = nil
        _ = try connection.request(.endBackgroundTask, { EndBackgroundTaskRequest(id: $0, task: id.rawValue) }, expecting: EmptyResult.self)
    }

    /// Wakes the app every `seconds` (at least 600, as on iOS) while it is in the
    /// background; the handler has 10 s.
    public func setKeepAliveTimeout(_ seconds: Double, handler: @escaping () -> Void) throws {
        _ = try connection.request(.setKeepAliveTimeout, { SetKeepAliveRequest(id: $0, seconds: seconds) }, expecting: EmptyResult.self)
        keepAliveHandler = handler
    }

    public func clearKeepAliveTimeout() throws {
        _ = try connection.request(.setKeepAliveTimeout, { SetKeepAliveRequest(id: $0, seconds: nil) }, expecting: EmptyResult.self)
        keepAliveHandler = nil
    }

    // MARK: - Events

    /// The next event, within the timeout (nil when none came; a negative timeout waits
    /// forever). The caller must ``acknowledge(_:)`` it once handled.
    public func nextEvent(timeoutMilliseconds: Int32) throws -> LifecycleEvent? {
        while let message = try connection.nextUnsolicited(timeoutMilliseconds: timeoutMilliseconds) {
            if case .event(let body) = message {
                let event = LifecycleEvent(body)
                state = event.state
                return event
            }
        }
        return nil
    }

    /// Tells voipd the event is handled.
    public func acknowledge(_ event: LifecycleEvent) throws {
        try acknowledge(eventID: event.id)
    }

    /// Tells voipd the event with this id is handled.
    public func acknowledge(eventID: UInt64) throws {
        try connection.post(.acknowledge, AcknowledgeMessage(event: eventID))
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
        case .keepAlive: keepAliveHandler?()
        case .backgroundTaskWillExpire: for handler in expirationHandlers.values { handler() }
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
        case .keepAlive, .backgroundTaskWillExpire: break
        }
        runHandlers(for: event)
    }
}
