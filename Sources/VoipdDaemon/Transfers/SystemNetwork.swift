import Glibc
import VoipdSystem
import VoipdTransfers

/// The network as the system has it: available when a default route exists (IPv4's
/// `/proc/net/route`, IPv6's `/proc/net/ipv6_route`), of the kind of the interface that route
/// goes through (`/sys/class/net/<name>`: `wireless/` or `phy80211` → wifi, `DEVTYPE=wwan` →
/// cellular, an Ethernet link → ethernet, anything else → other), expensive when that kind
/// is one of the configuration's `expensiveNetworks` (cellular by default).
/// Read again whenever rtnetlink says a link, an address or a route changed.
enum SystemNetwork {
    struct DefaultRoute: Equatable {
        var interface: String
        var metric: UInt32
    }

    /// The network now; `procNet` and `sysClassNet` are for tests.
    static func read(expensive: Set<String> = ["cellular"], procNet: String = "/proc/net", sysClassNet: String = "/sys/class/net") -> NetworkStatus {
        let routes = defaultRoutes(ipv4: ProcFS.read(procNet + "/route") ?? "") + defaultRoutes(ipv6: ProcFS.read(procNet + "/ipv6_route") ?? "")
        guard let best = routes.min(by: { $0.metric < $1.metric }) else {
            return NetworkStatus(isAvailable: false, kind: .other, isExpensive: false)
        }
        let kind = self.kind(ofInterface: best.interface, sysClassNet: sysClassNet)
        return NetworkStatus(isAvailable: true, kind: kind, isExpensive: expensive.contains(kind.rawValue))
    }

    /// IPv4 default routes (destination and mask 0, up), from `/proc/net/route`'s text.
    static func defaultRoutes(ipv4 text: String) -> [DefaultRoute] {
        text.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            // Iface Destination Gateway Flags RefCnt Use Metric Mask …
            guard fields.count >= 8, fields[1] == "00000000", fields[7] == "00000000",
                  let flags = UInt32(fields[3], radix: 16), flags & routeUp != 0, let metric = UInt32(fields[6]) else { return nil }
            return DefaultRoute(interface: String(fields[0]), metric: metric)
        }
    }

    /// IPv6 default routes (`::/0`, up, not a reject route such as the kernel's
    /// unreachable default on `lo`), from `/proc/net/ipv6_route`'s text.
    static func defaultRoutes(ipv6 text: String) -> [DefaultRoute] {
        text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            // destination prefix source prefix next-hop metric refcount use flags interface
            guard fields.count == 10, fields[0].allSatisfy({ $0 == "0" }), fields[1] == "00",
                  let metric = UInt32(fields[5], radix: 16), let flags = UInt32(fields[8], radix: 16),
                  flags & routeUp != 0, flags & routeReject == 0 else { return nil }
            return DefaultRoute(interface: String(fields[9]), metric: metric)
        }
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

    // RTF_UP and RTF_REJECT (<linux/route.h>, <linux/ipv6_route.h>).
    private static let routeUp: UInt32 = 0x1
    private static let routeReject: UInt32 = 0x200
}

/// What `voipctl network` set, field by field, over what the system says; a field not set
/// follows the system.
struct NetworkOverride: Equatable {
    var isAvailable: Bool?
    var kind: NetworkKind?
    var isExpensive: Bool?

    func applied(to system: NetworkStatus) -> NetworkStatus {
        NetworkStatus(isAvailable: isAvailable ?? system.isAvailable, kind: kind ?? system.kind, isExpensive: isExpensive ?? system.isExpensive)
    }
}
