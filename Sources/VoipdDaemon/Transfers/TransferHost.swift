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
    var network: NetworkStatus { networkOverride.applied(to: systemNetwork, expensiveKinds: expensiveNetworks) }
    /// The network kinds that are expensive, as the configuration said at start: like the
    /// rest of the service's settings, a reload keeps them.
    let expensiveNetworks: Set<String>
    /// The kernel's word on power supplies and the network, in the loop's epoll set.
    let conditions: ConditionsWatch
    /// Where ``powerOverride`` and ``networkOverride`` are kept (``saveOverrides()``).
    private let overridesPath: String

    init(configuration: TransferConfiguration, directory: String, loop: EventLoop, log: Logger, agentExecutable: String?,
         expensiveNetworks: Set<String>) throws {
        self.loop = loop
        self.expensiveNetworks = expensiveNetworks
        logger = log
        let store = try TransferStore(directory: directory)
        accounts = TransferAccounts(path: directory + "/accounts.json")
        overridesPath = directory + "/overrides.json"
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

    /// Reads the system's network again (``SystemNetwork``).
    func readSystemNetwork() {
        systemNetwork = SystemNetwork.read(expensive: expensiveNetworks)
    }

    // MARK: - voipctl power and voipctl network

    /// What `voipctl power` and `voipctl network` set, as kept beside the store: the
    /// settings are the user's word on this device's power and network, which neither an
    /// in-place upgrade nor a restart of voipd changes, so both keep them (as they keep the
    /// tasks the settings hold back); a reboot drops them, for the device may come up on
    /// another network and power supply. Hence the boot's id.
    private struct StoredOverrides: Codable {
        var bootID: String
        var power: PowerSource?
        var network: NetworkOverride
    }

    /// Takes the settings the last voipd of this boot kept; what to log about them, if anything.
    func loadOverrides() -> String? {
        guard let bytes = contentsIfReadable(overridesPath) else { return nil }
        let data = Data(bytes)
        let stored: StoredOverrides
        do {
            stored = try JSONDecoder().decode(StoredOverrides.self, from: data)
        } catch {
            return "cannot read \(overridesPath): \(error); the system's power and network are followed"
        }
        guard stored.bootID == ProcFS.bootID else {
            return "the settings of voipctl power and voipctl network were for an earlier boot: the system's power and network are followed"
        }
        powerOverride = stored.power
        networkOverride = stored.network
        guard powerOverride != nil || networkOverride != NetworkOverride() else { return nil }
        let fields = networkOverride.fields.map(\.rawValue)
        return "kept from before voipd started: " + ((powerOverride.map { ["power \($0.rawValue)"] } ?? []) + (fields.isEmpty ? [] : ["network's \(fields.joined(separator: ", "))"])).joined(separator: "; ")
    }

    /// Keeps the settings for the next program (``loadOverrides()``), written whole and
    /// renamed into place.
    func saveOverrides() throws {
        let stored = StoredOverrides(bootID: ProcFS.bootID ?? "", power: powerOverride, network: networkOverride)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try encoder.encode(stored).write(to: URL(fileURLWithPath: overridesPath), options: .atomic)
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
