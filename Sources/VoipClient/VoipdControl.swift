import Glibc
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// Administration of voipd (what `voipctl` does): launch and inspect apps, move them
/// between states, lock the screen, simulate memory pressure, follow the event stream.
public final class VoipdControl {
    public private(set) var connection: VoipdConnection

    public init(socketPath: String? = nil) throws {
        connection = try VoipdConnection(socketPath: socketPath)
    }

    /// Makes a request on the connection, or on a new one when voipd had closed it. voipd
    /// closes a connection that is neither an app nor following the event stream after a
    /// while without a request (`limits.helloTimeout`), whenever its timer fires: a look
    /// before the request (is it closed?) can see it open an instant before the close, and
    /// the request then finds it closed. So the request itself tells: one whose send found
    /// the connection closed never reached voipd (which neither read nor did it), and is
    /// made again on a new connection. One that reached voipd is never made twice. A
    /// connection with events or transitions still to read is kept for them.
    private func onLiveConnection<Result>(_ request: (VoipdConnection) throws -> Result) throws -> Result {
        do {
            return try request(connection)
        } catch VoipdError.disconnected where connection.lastRequestWasNotSent && !connection.hasBufferedMessages {
            connection = try VoipdConnection(socketPath: connection.socketPath)
            return try request(connection)
        }
    }

    /// Launches the app of a manifest, by name.
    public func launchManifest(_ name: String, background: Bool = false, waitForConnection: Bool = false,
                               timeout: Duration = .seconds(30)) throws -> AppStatus {
        let (result, _) = try onLiveConnection { connection in try connection.request(.launch, {
            LaunchRequest(id: $0, name: name, arguments: nil, background: background, waitForConnection: waitForConnection)
        }, expecting: AppResult.self, timeout: timeout) }
        return result.app
    }

    /// Launches a program under supervision. `output` (borrowed) receives its standard
    /// output and error. `adopt`: adoption rules for a program that does not speak the
    /// protocol (voipd finds and holds its VoIP sockets itself).
    public func launch(_ arguments: [String], name: String? = nil, environment: [String] = [], workingDirectory: String? = nil,
                       background: Bool = false, waitForConnection: Bool = false, speaksProtocol: Bool = true,
                       exitsOnSuspend: Bool = false, relaunchOnData: Bool = true, adopt: [String] = [], output: CInt? = nil,
                       timeout: Duration = .seconds(30)) throws -> AppStatus {
        let (result, _) = try onLiveConnection { connection in try connection.request(.launch, {
            LaunchRequest(id: $0, name: name, arguments: arguments, environment: environment.isEmpty ? nil : environment,
                          workingDirectory: workingDirectory, background: background, waitForConnection: waitForConnection,
                          speaksProtocol: adopt.isEmpty ? speaksProtocol : nil, exitsOnSuspend: exitsOnSuspend,
                          relaunchOnData: relaunchOnData, adopt: adopt.isEmpty ? nil : adopt)
        }, descriptors: output.map { [$0] } ?? [], expecting: AppResult.self, timeout: timeout) }
        return result.app
    }

    public func status(_ name: String? = nil) throws -> [AppStatus] {
        try onLiveConnection { connection in try connection.request(.status, { AppQueryRequest(id: $0, name: name) }, expecting: StatusResult.self).0.apps }
    }

    /// One app's status (throws `noSuchApp` if there is none).
    public func app(_ name: String) throws -> AppStatus {
        guard let app = try status(name).first else { throw VoipdError.unexpected("empty status") }
        return app
    }

    public func sockets(_ name: String? = nil) throws -> [HeldSocketStatus] {
        try onLiveConnection { connection in try connection.request(.sockets, { AppQueryRequest(id: $0, name: name) }, expecting: SocketsResult.self).0.sockets }
    }

    @discardableResult
    public func command(_ verb: AppVerb, _ name: String) throws -> AppStatus {
        try onLiveConnection { connection in try connection.request(.appCommand, { AppCommandRequest(id: $0, verb: verb, name: name) }, expecting: AppResult.self).0.app }
    }

    @discardableResult
    public func system(_ verb: SystemVerb, level: MemoryPressureLevel? = nil, count: Int? = nil) throws -> [String] {
        try onLiveConnection { connection in try connection.request(.systemCommand, { SystemCommandRequest(id: $0, verb: verb, level: level, count: count) },
                               expecting: SystemCommandResult.self).0.apps }
    }

    /// The recent transitions; with `follow`, later ones arrive through ``nextTransition(timeoutMilliseconds:)``.
    public func events(_ name: String? = nil, follow: Bool = false, to states: [AppState]? = nil) throws -> [TransitionRecord] {
        try onLiveConnection { connection in try connection.request(.events, { EventsRequest(id: $0, name: name, follow: follow, to: states) }, expecting: EventsResult.self).0.transitions }
    }

    /// The next transition of the followed stream, within the timeout (negative: forever).
    public func nextTransition(timeoutMilliseconds: Int32) throws -> TransitionRecord? {
        while let message = try connection.nextUnsolicited(timeoutMilliseconds: timeoutMilliseconds) {
            if case .transition(let record) = message { return record }
        }
        return nil
    }

    /// Asks voipd to re-execute itself in place; the reply comes from the new program.
    public func upgrade(timeout: Duration = .seconds(30)) throws -> UpgradeResult {
        try onLiveConnection { connection in try connection.request(.upgrade, { EmptyRequest(id: $0) }, expecting: UpgradeResult.self, timeout: timeout).0 }
    }

    /// The background transfers' tasks, of every app the caller may see, or of one.
    public func transfers(app: String? = nil) throws -> [TransferTaskStatus] {
        try onLiveConnection { connection in try connection.request(.transfers, { TransfersRequest(id: $0, app: app) }, expecting: TransferTasksResult.self).0.tasks }
    }

    /// Where background transfers take the power to come from (`auto`: what the system says).
    @discardableResult
    public func setPower(_ setting: PowerSetting) throws -> TransferConditionsResult {
        try onLiveConnection { connection in try connection.request(.systemCommand, { SystemCommandRequest(id: $0, verb: .power, power: setting) },
                           expecting: TransferConditionsResult.self).0 }
    }

    /// The network as background transfers see it; fields left nil keep their values.
    @discardableResult
    public func setNetwork(_ setting: NetworkSetting) throws -> TransferConditionsResult {
        try onLiveConnection { connection in try connection.request(.systemCommand, { SystemCommandRequest(id: $0, verb: .network, network: setting) },
                           expecting: TransferConditionsResult.self).0 }
    }

    public func stats() throws -> String {
        try onLiveConnection { connection in try connection.request(.stats, { EmptyRequest(id: $0) }, expecting: StatsResult.self).0.prometheus }
    }
}
