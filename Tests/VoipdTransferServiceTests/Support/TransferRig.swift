import Foundation
import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport
import VoipdTransferService
import VoipdTransfers

/// The transfer service in a loop of its own, with a store and a download directory in a
/// temporary directory, and the agent built beside the tests; the app is in the foreground
/// with its session open.
final class TransferRig {
    static let app = "phone"
    static let session = TransferSessionID(app: app, identifier: "bg")
    static let agentPath: String = {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let exe = String(decoding: buffer[0..<max(n, 0)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return String(exe[..<(exe.lastIndex(of: "/") ?? exe.endIndex)]) + "/voipd-transfer"
    }()

    let directory: String
    let storeDirectory: String
    /// Where downloads go (owned by the agent's uid).
    let downloads: String
    let configuration: TransferConfiguration
    let credentials: SpawnCredentials?
    private(set) var loop: TransferServiceLoop
    /// Deliveries are acknowledged as they come (the app handles them at once).
    var acknowledges = true

    /// A configuration for real time: retries 0.2 s to 1 s, events coalesced over 50 ms,
    /// progress every 50 ms.
    static var fastConfiguration: TransferConfiguration {
        var c = TransferConfiguration()
        c.retry = RetryCurve(initialDelay: 0.2, maximumDelay: 1)
        c.resumeLimiter.coalescingWindow = 0.05
        c.progressInterval = 0.05
        return c
    }

    /// `credentials`: the account the agent runs as (nil: the tests' own); `sessionOptions`:
    /// the session's.
    init(configuration: TransferConfiguration = fastConfiguration, credentials: SpawnCredentials? = nil, directory: String? = nil,
         sessionOptions: TransferOptions? = nil) throws {
        self.directory = try directory ?? makeTemporaryDirectory("voipd-transfers")
        storeDirectory = self.directory + "/store"
        downloads = self.directory + "/downloads"
        mkdir(downloads, 0o755)
        if let credentials { chown(downloads, credentials.uid, credentials.gid) }
        self.configuration = configuration
        self.credentials = credentials
        loop = try Self.makeLoop(configuration: configuration, store: storeDirectory, credentials: credentials)
        loop.onDelivery = { [unowned self] delivery in self.acknowledge(delivery) }
        loop.handle(.appPresence(app: Self.app, .foreground))
        loop.handle(.openSession(Self.session, sessionOptions))
    }

    private static func makeLoop(configuration: TransferConfiguration, store: String, credentials: SpawnCredentials?) throws -> TransferServiceLoop {
        let launcher = TransferAgentLauncher(executable: agentPath, environment: currentEnvironment(), credentials: { _ in credentials })
        return try TransferServiceLoop(configuration: configuration, store: TransferStore(directory: store), launcher: launcher)
    }

    deinit {
        stopAgents()
        removeTree(directory)
    }

    var service: TransferService { loop.service }
    var engine: TransferEngine { loop.service.engine }

    /// Kills every agent the service started and reaps them.
    func stopAgents() {
        for pid in service.agentProcesses {
            if let process = try? PidFd(pid: pid) {
                try? process.send(SIGKILL)
            }
        }
        loop.service.shutdown()
        _ = try? loop.run(timeout: 5) { loop.service.agentProcesses.isEmpty }
    }

    /// Simulates voipd ending at once (agents killed, nothing said to the engine) and starting
    /// again on the same store.
    func restartService() throws {
        let agents = service.agentProcesses
        for pid in agents {
            if let process = try? PidFd(pid: pid) {
                try? process.send(SIGKILL)
                // The old loop will not reap it: the test does.
                _ = try? process.waitForExit()
            }
        }
        loop = try Self.makeLoop(configuration: configuration, store: storeDirectory, credentials: credentials)
        loop.onDelivery = { [unowned self] delivery in self.acknowledge(delivery) }
    }

    private func acknowledge(_ delivery: TransferDelivery) {
        guard acknowledges else { return }
        loop.handle(.eventsHandled(app: delivery.app, delivery.id))
    }

    func create(_ spec: TransferTaskSpec, sourceLocation: SourceLocation = #_sourceLocation) throws -> TransferTaskID {
        guard case .taskCreated(let id)? = loop.handle(.createTask(Self.session, spec)) else {
            throw TestFailure("not created: \(String(describing: loop.handle(.tick)))")
        }
        return id
    }

    /// The completion of `task`, waited for.
    func completion(of task: TransferTaskID, timeout: Double = 60) throws -> TransferCompletion {
        var found: TransferCompletion?
        let done = try loop.run(timeout: timeout) {
            found = completionIfDelivered(task)
            return found != nil
        }
        guard done, let found else {
            throw TestFailure("task \(task) did not complete within \(timeout) s: \(String(describing: engine.tasks[task])); log: \(loop.logLines)")
        }
        return found
    }

    func completionIfDelivered(_ task: TransferTaskID) -> TransferCompletion? {
        for delivery in loop.deliveries {
            for event in delivery.events where event.task == task {
                if case .completed(let completion) = event.kind { return completion }
            }
        }
        return nil
    }

    func challenge(of task: TransferTaskID, timeout: Double = 30) throws -> AuthenticationChallenge {
        var found: AuthenticationChallenge?
        let done = try loop.run(timeout: timeout) {
            found = loop.deliveries.lazy.flatMap(\.events).filter { $0.task == task }.compactMap { event -> AuthenticationChallenge? in
                if case .challenge(let challenge) = event.kind { return challenge } else { return nil }
            }.last
            return found != nil
        }
        guard done, let found else { throw TestFailure("no challenge for task \(task)") }
        return found
    }

    /// Runs until `task` has received at least `bytes` (by the agent's progress reports).
    func waitForProgress(of task: TransferTaskID, atLeast bytes: Int64, timeout: Double = 60) throws {
        let done = try loop.run(timeout: timeout) { (engine.tasks[task]?.progress.bytesReceived ?? 0) >= bytes }
        guard done else { throw TestFailure("task \(task) did not reach \(bytes) bytes: \(String(describing: engine.tasks[task]))") }
    }

    func run(timeout: Double, until done: () -> Bool) throws -> Bool { try loop.run(timeout: timeout, until: done) }
}
