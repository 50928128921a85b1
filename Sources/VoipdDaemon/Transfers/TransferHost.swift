import FoundationEssentials
import Glibc
import VoipdSystem
import VoipdTransferService
import VoipdTransfers

/// voipd's side of the background-transfer service (docs/TRANSFERS.md): the service's
/// descriptors in voipd's epoll set, its deliveries and progress handed to the daemon, which
/// performs them between two turns of the loop (the lifecycle is never re-entered, and the
/// service is never called back from inside itself).
final class TransferHost: TransferServiceHost {
    private(set) var service: TransferService!
    let accounts: TransferAccounts
    private let loop: EventLoop
    private let logger: Logger
    /// The service's tokens and the loop's, for the descriptors it watches.
    private var loopTokens: [UInt64: UInt64] = [:]
    private var watched: [CInt: UInt64] = [:]
    /// Deliveries and progress the service handed over, for the daemon to perform.
    var pendingDeliveries: [TransferDelivery] = []
    var pendingProgress: [(app: String, event: TransferEvent)] = []
    /// The presence last fed to the service, by app.
    var presence: [String: AppPresence] = [:]
    /// Deliveries handed to an app's lifecycle and not yet handled, by delivery id.
    var inFlight: [UInt64: TransferDelivery] = [:]
    /// The power source `/sys/class/power_supply` gave, and `voipctl power`'s override.
    var systemPower: PowerSource = .unknown
    var powerOverride: PowerSource?
    var power: PowerSource { powerOverride ?? systemPower }
    /// The network the system has (``SystemNetwork``), and what `voipctl network` set over it.
    var systemNetwork = NetworkStatus()
    var networkOverride = NetworkOverride()
    /// The network as transfers see it.
    var network: NetworkStatus { networkOverride.applied(to: systemNetwork) }
    /// The kernel's word on power supplies and the network, in the loop's epoll set.
    let conditions: ConditionsWatch

    init(configuration: TransferConfiguration, directory: String, loop: EventLoop, log: Logger, agentExecutable: String?) throws {
        self.loop = loop
        logger = log
        let store = try TransferStore(directory: directory)
        accounts = TransferAccounts(path: directory + "/accounts.json")
        if let problem = accounts.load() { log.warning("transfers: \(problem)") }
        var problems: [String] = []
        conditions = ConditionsWatch(problems: &problems)
        for problem in problems { log.warning("transfers: \(problem)") }
        do {
            try conditions.register(in: loop)
        } catch {
            log.warning("transfers: power and network changes are not watched: \(error)")
        }
        var launcher = TransferAgentLauncher()
        if let agentExecutable { launcher.executable = agentExecutable }
        let accounts = self.accounts
        launcher.credentials = { app in try accounts.credentials(of: app) }
        service = try TransferService(configuration: configuration, store: store, launcher: launcher, host: self)
    }

    // MARK: - TransferServiceHost

    func watch(_ descriptor: borrowing FileDescriptor, events: EpollEvents, token: UInt64) {
        do {
            if let loopToken = watched[descriptor.rawValue] {
                try loop.modify(descriptor, events, token: loopToken)
            } else {
                let loopToken = try loop.register(descriptor, events, .transfer(token))
                watched[descriptor.rawValue] = loopToken
                loopTokens[token] = loopToken
            }
        } catch {
            logger.error("transfers: cannot watch descriptor \(descriptor.rawValue): \(error)")
        }
    }

    func unwatch(_ descriptor: borrowing FileDescriptor) {
        guard let loopToken = watched.removeValue(forKey: descriptor.rawValue) else { return }
        loopTokens = loopTokens.filter { $0.value != loopToken }
        loop.deregister(descriptor, token: loopToken)
    }

    func deliver(_ delivery: TransferDelivery) {
        pendingDeliveries.append(delivery)
    }

    func progress(app: String, _ event: TransferEvent) {
        pendingProgress.append((app, event))
    }

    func log(_ message: String) {
        logger.warning(message)
    }
}
