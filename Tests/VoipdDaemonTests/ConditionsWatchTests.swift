import Foundation
import Glibc
import Testing
import VoipdConfiguration
@testable import VoipdDaemon
import VoipdSystem
import VoipdTestSupport
import VoipdTransfers
import VoipdVocabulary

/// How voipd reads the kernel's word on power supplies and the network: the messages'
/// decoding (what a power supply's change looks like cannot be made on a machine without
/// one), the route tables' text, and a real kernel uevent through the watch's socket.
@Suite("Transfer conditions: decoding and the kernel's sockets")
struct ConditionsWatchTests {
    static func uevent(_ fields: [String]) -> [UInt8] { fields.flatMap { Array($0.utf8) + [0] } }

    @Test("a power supply's uevent is decoded; udev's re-broadcast and garbage are not events")
    func uevents() {
        let change = Self.uevent(["change@/devices/LNXSYSTM:00/ACPI0003:00/power_supply/AC", "ACTION=change",
                                  "DEVPATH=/devices/LNXSYSTM:00/ACPI0003:00/power_supply/AC", "SUBSYSTEM=power_supply",
                                  "POWER_SUPPLY_NAME=AC", "POWER_SUPPLY_ONLINE=0", "SEQNUM=4242"])
        let event = KernelUevent.decode(change)
        #expect(event?.action == "change")
        #expect(event?.devicePath == "/devices/LNXSYSTM:00/ACPI0003:00/power_supply/AC")
        #expect(event?.subsystem == "power_supply")
        #expect(event?.properties["POWER_SUPPLY_ONLINE"] == "0")
        #expect(KernelUevent.decode(Array("libudev".utf8) + [0, 0xfe, 0xed, 0xca, 0xfe]) == nil)
        #expect(KernelUevent.decode([]) == nil)
        #expect(KernelUevent.decode(Array("no at sign".utf8) + [0]) == nil)
        #expect(KernelUevent.decode(Self.uevent(["add@/x", "NOEQUALS", "A=b=c"]))?.properties == ["A": "b=c"])
    }

    static func netlinkMessage(type: UInt16, payload: Int) -> [UInt8] {
        var header = [UInt8](repeating: 0, count: 16)
        header.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: UInt32(16 + payload), toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: type, toByteOffset: 4, as: UInt16.self)
        }
        // Each message is padded to 4 bytes.
        return header + [UInt8](repeating: 0xaa, count: payload) + [UInt8](repeating: 0, count: (4 - payload % 4) % 4)
    }

    @Test("rtnetlink datagrams: every message's type, aligned; a truncated or nonsensical length ends the walk")
    func routeMessages() {
        let datagram = Self.netlinkMessage(type: RouteNetlinkMessages.newRoute, payload: 45)
            + Self.netlinkMessage(type: RouteNetlinkMessages.deleteAddress, payload: 8)
            + Self.netlinkMessage(type: 3, payload: 0)
        #expect(RouteNetlinkMessages.types(in: datagram) == [RouteNetlinkMessages.newRoute, RouteNetlinkMessages.deleteAddress, 3])
        #expect(RouteNetlinkMessages.changesConnectivity(RouteNetlinkMessages.newLink))
        #expect(!RouteNetlinkMessages.changesConnectivity(3), "NLMSG_DONE")
        var truncated = Self.netlinkMessage(type: RouteNetlinkMessages.newLink, payload: 20)
        truncated.removeLast(4)
        #expect(RouteNetlinkMessages.types(in: truncated).isEmpty)
        var tooShort = Self.netlinkMessage(type: RouteNetlinkMessages.newLink, payload: 0)
        tooShort[0] = 8
        #expect(RouteNetlinkMessages.types(in: tooShort).isEmpty)
        #expect(RouteNetlinkMessages.types(in: [1, 2, 3]).isEmpty)
    }

    @Test("default routes from /proc/net/route and /proc/net/ipv6_route; the lowest metric's interface decides")
    func defaultRoutes() throws {
        let ipv4 = """
            Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
            wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0
            eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
            eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
            wwan0\t00000000\t00000000\t0000\t0\t0\t0\t00000000\t0\t0\t0
            """
        #expect(SystemNetwork.defaultRoutes(ipv4: ipv4) == [.init(interface: "wlan0", metric: 600), .init(interface: "eth0", metric: 100)],
                "a route that is not up is no route")
        let ipv6 = """
            fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000002 00000000 00000001     eth0
            00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000003 00000000 00000003     eth0
            00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
            """
        #expect(SystemNetwork.defaultRoutes(ipv6: ipv6) == [.init(interface: "eth0", metric: 0x400)], "the unreachable default on lo is no route")

        // An interface's kind, from a copy of /sys/class/net.
        let root = try makeTemporaryDirectory("voipd-sysnet")
        defer { removeTree(root) }
        func interface(_ name: String, type: String, uevent: String = "", wireless: Bool = false) throws {
            mkdir(root + "/" + name, 0o755)
            try (type + "\n").write(toFile: root + "/\(name)/type", atomically: true, encoding: .utf8)
            try uevent.write(toFile: root + "/\(name)/uevent", atomically: true, encoding: .utf8)
            if wireless { mkdir(root + "/\(name)/wireless", 0o755) }
        }
        try interface("wlan0", type: "1", uevent: "DEVTYPE=wlan\nINTERFACE=wlan0\n", wireless: true)
        try interface("wwan0", type: "519", uevent: "DEVTYPE=wwan\nINTERFACE=wwan0\n")
        try interface("eth0", type: "1", uevent: "INTERFACE=eth0\n")
        try interface("lo", type: "772")
        #expect(SystemNetwork.kind(ofInterface: "wlan0", sysClassNet: root) == .wifi)
        #expect(SystemNetwork.kind(ofInterface: "wwan0", sysClassNet: root) == .cellular)
        #expect(SystemNetwork.kind(ofInterface: "eth0", sysClassNet: root) == .ethernet)
        #expect(SystemNetwork.kind(ofInterface: "lo", sysClassNet: root) == .other)
        #expect(SystemNetwork.kind(ofInterface: "../etc", sysClassNet: root) == .other)

        // The whole reading, from a copy of /proc/net: the lowest metric wins; cellular is expensive.
        let proc = try makeTemporaryDirectory("voipd-procnet")
        defer { removeTree(proc) }
        try ipv4.replacingOccurrences(of: "wwan0\t00000000\t00000000\t0000", with: "wwan0\t00000000\t00000000\t0001")
            .write(toFile: proc + "/route", atomically: true, encoding: .utf8)
        try "".write(toFile: proc + "/ipv6_route", atomically: true, encoding: .utf8)
        #expect(SystemNetwork.read(procNet: proc, sysClassNet: root) == NetworkStatus(isAvailable: true, kind: .cellular, isExpensive: true))
        #expect(SystemNetwork.read(expensive: ["wifi"], procNet: proc, sysClassNet: root) == NetworkStatus(isAvailable: true, kind: .cellular, isExpensive: false),
                "the configuration's expensiveNetworks decide")
        try "".write(toFile: proc + "/route", atomically: true, encoding: .utf8)
        #expect(SystemNetwork.read(procNet: proc, sysClassNet: root).isAvailable == false)
    }

    @Test("the configuration's expensiveNetworks: cellular by default, any list of kinds, a bad kind refused by name")
    func expensiveNetworksKey() throws {
        #expect(try TransfersFile().resolve().get().expensiveNetworks == ["cellular"])
        let file = try JSONDecoder().decode(TransfersFile.self, from: Data(#"{"expensiveNetworks": ["cellular", "wifi-hotspot"]}"#.utf8))
        #expect(try file.resolve().get().expensiveNetworks == ["cellular", "wifi-hotspot"])
        let bad = try JSONDecoder().decode(TransfersFile.self, from: Data(#"{"expensiveNetworks": ["Wi Fi"]}"#.utf8))
        guard case .failure(let invalid) = bad.resolve() else { Issue.record("a kind with spaces was taken"); return }
        #expect(invalid.key == "expensiveNetworks")
        #expect(TransfersFile.keys.contains("expensiveNetworks"))
    }

    @Test("voipctl network's settings stay over the system's network, field by field")
    func overrides() {
        let system = NetworkStatus(isAvailable: true, kind: .wifi, isExpensive: false)
        #expect(NetworkOverride().applied(to: system) == system)
        #expect(NetworkOverride(isExpensive: true).applied(to: system) == NetworkStatus(isAvailable: true, kind: .wifi, isExpensive: true))
        #expect(NetworkOverride(isAvailable: false, kind: .cellular).applied(to: system)
                == NetworkStatus(isAvailable: false, kind: .cellular, isExpensive: false))
    }

    @Test("the uevent socket receives a real kernel uevent (lo's, asked for through its uevent file)",
          .enabled(if: geteuid() == 0 || runningUnderCI, "writing a device's uevent file needs root"))
    func realUevent() throws {
        let watch = try NetlinkSubscription(protocol: NetlinkSubscription.kernelObjectEvents, groups: NetlinkSubscription.kernelEventGroup)
        let trigger = try openFile("/sys/class/net/lo/uevent", flags: O_WRONLY)
        try trigger.writeAll(Array("change".utf8))
        let deadline = MonotonicInstant.now + .seconds(10)
        var seen: KernelUevent?
        while seen == nil, try waitReadable(watch.descriptor.rawValue, until: deadline) {
            seen = try watch.receiveAll().datagrams.compactMap(KernelUevent.decode).first {
                $0.action == "change" && $0.subsystem == "net" && $0.properties["INTERFACE"] == "lo"
            }
        }
        #expect(seen != nil, "no uevent for lo within 10 s")
    }
}
