import Glibc
import VoipdSystem

/// The kernel's word that the conditions of discretionary transfers may have changed, on
/// voipd's loop: device events for power supplies (`NETLINK_KOBJECT_UEVENT`; sysfs's
/// `online` and `status` files change without any inotify event) and rtnetlink's links,
/// addresses, routes and routing rules. Nothing is polled: the sockets are in the epoll set, and the
/// conditions are read again only when one of them says something relevant.
final class ConditionsWatch {
    /// What a drain of the sockets found.
    struct Changes {
        var power = false
        var network = false
    }

    private let uevents: NetlinkSubscription?
    private let routes: NetlinkSubscription?

    /// Opens the sockets; one that cannot be opened is reported in `problems`, and its
    /// condition is then read only at start and on `voipctl power --source auto`.
    init(problems: inout [String]) {
        do {
            uevents = try NetlinkSubscription(protocol: NetlinkSubscription.kernelObjectEvents, groups: NetlinkSubscription.kernelEventGroup)
        } catch {
            uevents = nil
            problems.append("power supply changes are not watched: \(error)")
        }
        let groups = NetlinkSubscription.RouteGroup.self
        do {
            routes = try NetlinkSubscription(protocol: NetlinkSubscription.routes,
                                             groups: groups.link | groups.ipv4Address | groups.ipv4Route | groups.ipv4Rule | groups.ipv6Address | groups.ipv6Route,
                                             memberships: [groups.ipv6RuleMembership])
        } catch {
            routes = nil
            problems.append("network changes are not watched: \(error)")
        }
    }

    /// The loop's tokens of the sockets while they are in its epoll set.
    private var tokens: [UInt64] = []

    /// Puts the open sockets in the loop's epoll set.
    func register(in loop: EventLoop) throws(Errno) {
        switch uevents {
        case .some(let socket): tokens.append(try loop.register(socket.descriptor, .readable, .transferConditions))
        case .none: break
        }
        switch routes {
        case .some(let socket): tokens.append(try loop.register(socket.descriptor, .readable, .transferConditions))
        case .none: break
        }
    }

    /// Takes them out of it, for good.
    func deregister(from loop: EventLoop) {
        var index = 0
        switch uevents {
        case .some(let socket) where index < tokens.count:
            loop.deregister(socket.descriptor, token: tokens[index])
            index += 1
        default: break
        }
        switch routes {
        case .some(let socket) where index < tokens.count: loop.deregister(socket.descriptor, token: tokens[index])
        default: break
        }
        tokens = []
    }

    var isWatching: Bool { !tokens.isEmpty }

    /// Reads everything waiting on both sockets and says what it concerns. A lost message
    /// (the receive buffer overflowed) counts as a change: the reader reads afresh.
    func drain() throws(Errno) -> Changes {
        var changes = Changes()
        guard isWatching else { return changes }
        switch uevents {
        case .some(let socket):
            let received = try socket.receiveAll()
            changes.power = received.overflowed || received.datagrams.contains { KernelUevent.decode($0)?.subsystem == "power_supply" }
        case .none: break
        }
        switch routes {
        case .some(let socket):
            let received = try socket.receiveAll()
            changes.network = received.overflowed
                || received.datagrams.contains { RouteNetlinkMessages.types(in: $0).contains(where: RouteNetlinkMessages.changesConnectivity) }
        case .none: break
        }
        return changes
    }
}
