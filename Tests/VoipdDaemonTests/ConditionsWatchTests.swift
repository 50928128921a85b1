import Foundation
import Glibc
import Testing
import VoipdConfiguration
@testable import VoipdDaemon
import VoipdProtocol
import VoipdSystem
import VoipdTestSupport
import VoipdTransfers
import VoipdVocabulary

/// How voipd reads the kernel's word on power supplies and the network: the messages'
/// decoding (what a power supply's change looks like cannot be made on a machine without
/// one), the kernel's answers about routes, and a real kernel uevent through the watch's socket.
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

    /// An answer of the kernel to `RTM_GETROUTE`: an `nlmsghdr` of `type`, then `payload`.
    static func routeAnswer(type: UInt16, _ payload: [UInt8]) -> [UInt8] {
        var header = [UInt8](repeating: 0, count: 16)
        header.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: UInt32(16 + payload.count), toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: type, toByteOffset: 4, as: UInt16.self)
        }
        return header + payload
    }

    @Test("the kernel's answer for one destination: the unicast route's interface; no route, an unreachable or a blackhole one is none")
    func routeAnswers() throws {
        let request = RouteLookup.request(to: [8, 8, 8, 8])
        #expect(request.count == 36 && request.suffix(4) == [8, 8, 8, 8] && request[16] == UInt8(AF_INET) && request[17] == 32)
        #expect(RouteLookup.request(to: [UInt8](repeating: 0x20, count: 16)).count == 48)
        // rtmsg (unicast), RTA_TABLE 100, RTA_OIF 1 (lo).
        let rtmsg: [UInt8] = [UInt8(AF_INET), 32, 0, 0, 100, 0, 0, 1, 0, 0, 0, 0]
        let table: [UInt8] = [8, 0, 15, 0, 100, 0, 0, 0]
        let oif: [UInt8] = [8, 0, 4, 0, 1, 0, 0, 0]
        #expect(try RouteLookup.answer(Self.routeAnswer(type: 24, rtmsg + table + oif))?.interface == "lo")
        var local = rtmsg
        local[7] = 2
        #expect(try RouteLookup.answer(Self.routeAnswer(type: 24, local + oif)) == nil, "a local route leads nowhere out")
        for error in [ENETUNREACH, EHOSTUNREACH, EINVAL] {
            let code = withUnsafeBytes(of: Int32(-error)) { Array($0) }
            #expect(try RouteLookup.answer(Self.routeAnswer(type: 2, code + [UInt8](repeating: 0, count: 16))) == nil)
        }
        let code = withUnsafeBytes(of: Int32(-ENOMEM)) { Array($0) }
        #expect(throws: Errno.self) { try RouteLookup.answer(Self.routeAnswer(type: 2, code + [UInt8](repeating: 0, count: 16))) }
        #expect(throws: Errno.self) { try RouteLookup.answer([1, 2, 3]) }
    }

    @Test("the kind of an interface, from /sys/class/net")
    func interfaceKinds() throws {
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

    @Test("voipctl network's settings stay over the system's network, field by field; a kind set is expensive as configured")
    func overrides() {
        let system = NetworkStatus(isAvailable: true, kind: .wifi, isExpensive: false)
        let expensive: Set<String> = ["cellular"]
        #expect(NetworkOverride().applied(to: system, expensiveKinds: expensive) == system)
        #expect(NetworkOverride().fields == [])
        #expect(NetworkOverride(isExpensive: true).applied(to: system, expensiveKinds: expensive)
                == NetworkStatus(isAvailable: true, kind: .wifi, isExpensive: true))
        #expect(NetworkOverride(isAvailable: false, kind: .cellular).applied(to: system, expensiveKinds: expensive)
                == NetworkStatus(isAvailable: false, kind: .cellular, isExpensive: true))
        #expect(NetworkOverride(kind: .ethernet).applied(to: NetworkStatus(isAvailable: true, kind: .cellular, isExpensive: true), expensiveKinds: expensive)
                == NetworkStatus(isAvailable: true, kind: .ethernet, isExpensive: false))
        #expect(NetworkOverride(kind: .cellular, isExpensive: false).applied(to: system, expensiveKinds: expensive)
                == NetworkStatus(isAvailable: true, kind: .cellular, isExpensive: false))
        #expect(NetworkOverride(isAvailable: false, kind: .cellular).fields == [.kind, .available])
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
