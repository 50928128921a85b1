import VoipdSystem
import VoipdTransfers

/// Where the device's power comes from, as `/sys/class/power_supply` says: external power if
/// a mains or USB supply is online, or a battery is not discharging; on battery if batteries
/// discharge and nothing else is online; unknown (treated as external, as on a server) when
/// there is no supply at all.
enum PowerSupply {
    /// One supply's `type`, `online` and `status` files.
    struct Reading: Equatable {
        var type: String
        var online: String?
        var status: String?
    }

    static func source(of supplies: [Reading]) -> PowerSource {
        var sawBattery = false
        for supply in supplies {
            switch supply.type {
            case "Mains", "USB", "USB_C", "USB_PD", "Wireless":
                if supply.online == "1" { return .externalPower }
            case "Battery":
                sawBattery = true
                if let status = supply.status, status != "Discharging" && status != "Unknown" { return .externalPower }
            default:
                continue
            }
        }
        return sawBattery ? .battery : .unknown
    }

    /// The supplies under `root` (unreadable ones are left out).
    static func read(root: String = "/sys/class/power_supply") -> [Reading] {
        let names: [String]
        do {
            // Not FileManager: what it sets up at first use is voipd's resident memory.
            names = try DirectoryEntry.names(in: root)
        } catch {
            return []
        }
        return names.sorted().compactMap { name in
            let directory = root + "/" + name + "/"
            guard let type = value(directory + "type") else { return nil }
            return Reading(type: type, online: value(directory + "online"), status: value(directory + "status"))
        }
    }

    private static func value(_ path: String) -> String? {
        guard let content = ProcFS.read(path) else { return nil }
        // sysfs values end with a newline, and some have spaces inside ("Not charging").
        let text = content.drop { $0.isWhitespace }
        return String(text.reversed().drop { $0.isWhitespace }.reversed())
    }
}
