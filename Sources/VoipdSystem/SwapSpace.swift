import Glibc

/// One swap area in use (a line of `/proc/swaps`).
public struct SwapArea: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable {
        case partition
        case file
    }

    /// The device or file (`/dev/zram0`, `/swapfile`); `\040` and the like undone.
    public var path: String
    public var kind: Kind
    public var size: UInt64
    public var used: UInt64
    /// Higher first: the kernel fills the area of the highest priority before the next.
    public var priority: Int

    public init(path: String, kind: Kind, size: UInt64, used: UInt64, priority: Int) {
        self.path = path
        self.kind = kind
        self.size = size
        self.used = used
        self.priority = priority
    }

    /// The zram device's name ("zram0") if the area is one: swap compressed in memory.
    public var zramDevice: String? {
        guard kind == .partition, path.hasPrefix("/dev/zram") else { return nil }
        return String(path.dropFirst(5))
    }
}

/// A zram device: a block device that compresses what is written to it into memory
/// (`/sys/block/zramN`).
public struct ZramDevice: Sendable, Equatable {
    /// "zram0".
    public var name: String
    /// The size it was given (`disksize`); 0 while it is not set up.
    public var diskSize: UInt64
    /// The compression algorithm in use (the one in brackets in `comp_algorithm`).
    public var algorithm: String
    /// `mm_stat`: what was stored, what it compressed to, and the memory the device uses for
    /// it (with its allocator's overhead): the true cost of what was swapped to it.
    public var storedBytes: UInt64
    public var compressedBytes: UInt64
    public var memoryUsed: UInt64

    /// Reads `/sys/block/NAME`; `ENOENT` when there is no such device.
    public static func read(_ name: String) throws -> ZramDevice {
        let directory = "/sys/block/\(name)"
        let size = UInt64(try ProcFS.contents(of: directory + "/disksize", limit: 64).filter { !$0.isWhitespace }) ?? 0
        let algorithms = try ProcFS.contents(of: directory + "/comp_algorithm", limit: 4096)
        let chosen = algorithms.split(separator: " ").first { $0.hasPrefix("[") }.map { String($0.filter { $0 != "[" && $0 != "]" && !$0.isWhitespace }) }
        // mm_stat: orig_data_size compr_data_size mem_used_total mem_limit mem_used_max …
        let statistics = try ProcFS.contents(of: directory + "/mm_stat", limit: 4096).split(whereSeparator: \.isWhitespace).map { UInt64($0) ?? 0 }
        guard statistics.count >= 3 else { throw Errno(EINVAL, call: "\(directory)/mm_stat: \(statistics.count) fields") }
        return ZramDevice(name: name, diskSize: size, algorithm: chosen ?? "", storedBytes: statistics[0],
                          compressedBytes: statistics[1], memoryUsed: statistics[2])
    }

    /// The zram devices the kernel has (set up or not).
    public static func all() -> [String] {
        let names = (try? DirectoryEntry.names(in: "/sys/block")) ?? []
        return names.filter { $0.hasPrefix("zram") }.sorted()
    }
}

/// Where paged-out memory can go: the swap areas in use, and whether zswap compresses in
/// front of them.
public struct SwapSpace: Sendable, Equatable {
    public var areas: [SwapArea]
    /// zswap (`/sys/module/zswap/parameters/enabled`): pages bound for a swap area are
    /// compressed in memory first, and written to the area only when its pool is full.
    public var zswapEnabled: Bool

    public init(areas: [SwapArea], zswapEnabled: Bool) {
        self.areas = areas
        self.zswapEnabled = zswapEnabled
    }

    /// Whether anonymous memory can be paged out at all. Without swap, only pages backed
    /// by files can go: see ``MemoryAdvice/pageOut``.
    public var isAvailable: Bool { areas.contains { $0.size > $0.used } }

    public var size: UInt64 { areas.reduce(0) { $0 + $1.size } }
    public var free: UInt64 { areas.reduce(0) { $0 + ($1.size - min($1.used, $1.size)) } }

    /// The areas the kernel uses now (`/proc/swaps`) and zswap's switch.
    public static func current() throws -> SwapSpace {
        let areas = parse(swaps: try ProcFS.contents(of: "/proc/swaps", limit: 1 << 20))
        let zswap = (try? ProcFS.contents(of: "/sys/module/zswap/parameters/enabled", limit: 16))?.hasPrefix("Y") ?? false
        return SwapSpace(areas: areas, zswapEnabled: zswap)
    }

    /// The areas of a `/proc/swaps` text (`Filename Type Size Used Priority`, sizes in KiB).
    public static func parse(swaps text: String) -> [SwapArea] {
        text.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 5, let kind = SwapArea.Kind(rawValue: String(fields[1])),
                  let size = UInt64(fields[2]), let used = UInt64(fields[3]), let priority = Int(fields[4]) else { return nil }
            return SwapArea(path: unescapeOctal(fields[0]), kind: kind, size: size * 1024, used: used * 1024, priority: priority)
        }
    }

    /// The kernel writes a space in a path as `\040` (and a tab, newline or backslash alike).
    private static func unescapeOctal(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "\\"), utf8.count >= 3, let value = UInt8(String(decoding: utf8.prefix(3), as: UTF8.self), radix: 8) {
                bytes.append(value)
                utf8 = utf8.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
