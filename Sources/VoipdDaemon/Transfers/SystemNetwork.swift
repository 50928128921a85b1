import Glibc
import VoipdProtocol
import VoipdSystem
import VoipdTransfers

/// The network as the system has it, as a user would say it is there: available when the
/// kernel has a way out, or a local network to use.
/// - A route to the Internet, as the kernel answers for one of its addresses (8.8.8.8, then
///   2001:4860:4860::8888; ``RouteLookup``, `ip route get`): the routing rules and every
///   table count, so a default route in a table of its own (`ip rule`) counts, and its
///   interface gives the kind.
/// - Else an interface up with a carrier, not loopback, with an address (``NetworkInterfaces``):
///   a device on a local network without a default route (a LAN, a lab, a ship) still
///   reaches the servers on it; the first such interface gives the kind.
/// - Else unavailable.
/// The kind of an interface: `wireless/` or `phy80211` in `/sys/class/net/<name>` → wifi,
/// `DEVTYPE=wwan` → cellular, an Ethernet link → ethernet, anything else → other; expensive
/// when that kind is one of the configuration's `expensiveNetworks` (cellular by default).
/// Read again whenever rtnetlink says a link, an address, a route or a rule changed.
enum SystemNetwork {
    /// Addresses standing for "the Internet": only the kernel's routing decision for them is
    /// asked, nothing is sent.
    static let outwardAddresses: [[UInt8]] = [[8, 8, 8, 8], [0x20, 0x01, 0x48, 0x60, 0x48, 0x60, 0, 0, 0, 0, 0, 0, 0, 0, 0x88, 0x88]]

    /// The interface the network is reached through; nil when there is none.
    static func reachedThrough() -> String? {
        for address in outwardAddresses {
            do {
                if let route = try RouteLookup.route(to: address) { return route.interface }
            } catch {
                // The kernel could not say (IPv6 disabled: EAFNOSUPPORT): no route that way.
                continue
            }
        }
        do {
            return try NetworkInterfaces.connected().first
        } catch {
            // getifaddrs failed (ENOMEM): nothing known of a local network either.
            return nil
        }
    }

    /// The network now; `sysClassNet` is for tests.
    static func read(expensive: Set<String> = ["cellular"], sysClassNet: String = "/sys/class/net") -> NetworkStatus {
        guard let interface = reachedThrough() else { return NetworkStatus(isAvailable: false, kind: .other, isExpensive: false) }
        let kind = self.kind(ofInterface: interface, sysClassNet: sysClassNet)
        return NetworkStatus(isAvailable: true, kind: kind, isExpensive: expensive.contains(kind.rawValue))
    }

    static func kind(ofInterface name: String, sysClassNet: String = "/sys/class/net") -> NetworkKind {
        guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else { return .other }
        let directory = sysClassNet + "/" + name
        if access(directory + "/wireless", F_OK) == 0 || access(directory + "/phy80211", F_OK) == 0 { return .wifi }
        let uevent = ProcFS.read(directory + "/uevent") ?? ""
        if uevent.split(separator: "\n").contains("DEVTYPE=wwan") { return .cellular }
        // ARPHRD_ETHER; other link types (loopback, tunnels, PPP) say nothing of the medium.
        if (ProcFS.read(directory + "/type") ?? "").split(separator: "\n").first == "1" { return .ethernet }
        return .other
    }
}

/// What `voipctl network` set, field by field, over what the system says; a field not set
/// follows the system (`voipctl network --expensive auto` and the like unset one).
struct NetworkOverride: Codable, Equatable {
    var isAvailable: Bool?
    var kind: NetworkKind?
    var isExpensive: Bool?

    /// The network as transfers see it. A kind set here and no `isExpensive` is expensive as
    /// the configuration says of that kind, as the system's would be.
    func applied(to system: NetworkStatus, expensiveKinds: Set<String>) -> NetworkStatus {
        let expensive = isExpensive ?? (kind.map { expensiveKinds.contains($0.rawValue) } ?? system.isExpensive)
        return NetworkStatus(isAvailable: isAvailable ?? system.isAvailable, kind: kind ?? system.kind, isExpensive: expensive)
    }

    /// The fields set, in the protocol's terms.
    var fields: [NetworkSetting.Field] {
        [(NetworkSetting.Field.expensive, isExpensive != nil), (.kind, kind != nil), (.available, isAvailable != nil)].filter(\.1).map(\.0)
    }
}
