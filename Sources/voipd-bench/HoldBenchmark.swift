import Glibc
import VoipClient
import VoipdProtocol
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// `voipd-bench hold`: voipd holding as many sockets as its descriptor limit allows, listed
/// with `sockets` and carried over by in-place upgrades.
enum HoldBenchmark {
    static func main(_ arguments: [String]) -> Int32 {
        runSubcommand("hold", arguments: arguments, run: run)
    }

    private static func run(_ options: HoldOptions) throws {
        let voipd = try options.voipd ?? BenchPaths.buildVoipd()
        let limit = try raiseDescriptorLimit()
        guard options.sockets + 100 <= limit else {
            throw BenchError("--sockets \(options.sockets) needs \(options.sockets + 100) descriptors here and in voipd; RLIMIT_NOFILE allows \(limit)")
        }
        let directory = try TemporaryDirectory("voipd-bench")
        progress("\(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPUs, load average \(WakeBenchmark.loadAverage()), descriptor limit \(limit)")
        try pinCurrentThread(to: options.placement.supervisorCPU)
        let configuration = """
        {"socketQuota": \(options.perApp), "limits": {"appsPerUser": 100000, "connectionsPerUser": 100000, "heldSocketsPerUser": 1000000}}

        """
        let daemon = try DaemonUnderTest(binary: voipd, directory: directory.path, configurationText: configuration)
        defer { daemon.stop() }
        try pinCurrentThread(to: options.placement.peerCPU)

        var result = HoldResult(options: options)
        let registering = MonotonicInstant.now
        let fleet = try HoldingFleet(socketPath: daemon.socketPath, sockets: options.sockets, perApp: options.perApp)
        result.registerSeconds = Double(MonotonicInstant.now.nanoseconds - registering.nanoseconds) / 1e9
        progress("\(options.sockets) sockets held for \(fleet.apps.count) apps in \(fixed(result.registerSeconds, 2)) s")
        result.rssBeforeKiB = StartupBenchmark.residentKilobytes(daemon.pid)

        let control = try VoipdConnection(socketPath: daemon.socketPath)
        let (listed, _) = try control.request(.sockets, { AppQueryRequest(id: $0) }, expecting: SocketsResult.self)
        guard listed.sockets.count == options.sockets else {
            throw BenchError("voipd listed \(listed.sockets.count) sockets, not \(options.sockets)")
        }
        let lister = RawLister(connection: control)
        _ = try lister.list()
        for _ in 0..<options.listings {
            let cpuBefore = try cpuNanoseconds(daemon.pid)
            let (nanoseconds, frames) = try lister.list()
            result.listingCPU.append(try cpuNanoseconds(daemon.pid) - cpuBefore)
            result.listingWall.append(nanoseconds)
            result.frames = frames
        }
        result.rssAfterListingsKiB = StartupBenchmark.residentKilobytes(daemon.pid)
        result.peakKiB = peakKilobytes(daemon.pid)

        for index in 0..<options.upgrades {
            progress("upgrade \(index + 1)/\(options.upgrades)")
            let cpuBefore = try cpuNanoseconds(daemon.pid)
            let started = MonotonicInstant.now
            let (upgraded, _) = try control.request(.upgrade, { EmptyRequest(id: $0) }, expecting: UpgradeResult.self)
            result.upgradeWall.append(MonotonicInstant.now.nanoseconds - started.nanoseconds)
            result.upgradeCPU.append(try cpuNanoseconds(daemon.pid) - cpuBefore)
            guard upgraded.heldSockets == options.sockets else {
                throw BenchError("after an upgrade voipd holds \(upgraded.heldSockets) sockets, not \(options.sockets)")
            }
        }
        result.rssAfterUpgradesKiB = StartupBenchmark.residentKilobytes(daemon.pid)
        result.loadAverage = WakeBenchmark.loadAverage()
        print(options.json ? result.json : result.lines)
        withExtendedLifetime(fleet) {}
    }

    /// Raises the soft descriptor limit to the hard one; returns it.
    private static func raiseDescriptorLimit() throws -> Int {
        var limit = rlimit()
        _ = try valueOrErrno("getrlimit(RLIMIT_NOFILE)") { getrlimit(RLIMIT_NOFILE_VALUE, &limit) }
        limit.rlim_cur = limit.rlim_max
        _ = try valueOrErrno("setrlimit(RLIMIT_NOFILE)") { setrlimit(RLIMIT_NOFILE_VALUE, &limit) }
        return Int(limit.rlim_cur)
    }

    /// The CPU time a process's main thread has run (/proc/PID/schedstat), in ns: an
    /// in-place upgrade keeps the thread.
    static func cpuNanoseconds(_ pid: pid_t) throws -> UInt64 {
        guard let text = ProcFS.read("/proc/\(pid)/schedstat"), let first = text.split(separator: " ").first, let value = UInt64(first) else {
            throw BenchError("cannot read /proc/\(pid)/schedstat")
        }
        return value
    }

    /// VmHWM, in KiB.
    static func peakKilobytes(_ pid: pid_t) -> Int {
        let status = ProcFS.read("/proc/\(pid)/status") ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
}

private let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(UInt32(RLIMIT_NOFILE.rawValue))

/// Apps holding sockets: one connection each, `perApp` sockets registered on it. The bench
/// keeps the other end of every socket, so that none reads as closed.
final class HoldingFleet {
    let apps: [VoipdConnection]
    private let peers: [DescriptorBox]

    init(socketPath: String, sockets: Int, perApp: Int) throws {
        var apps: [VoipdConnection] = []
        var peers: [DescriptorBox] = []
        peers.reserveCapacity(sockets)
        while peers.count < sockets {
            let app = try VoipdConnection(socketPath: socketPath)
            let index = apps.count
            _ = try app.request(.hello, { HelloRequest(id: $0, name: "hold-\(index)") }, expecting: HelloResult.self)
            apps.append(app)
            for number in 0..<min(perApp, sockets - peers.count) {
                let pair = try Socket.pair()
                _ = try app.request(.registerSocket, { SocketNameRequest(id: $0, name: "s\(number)") },
                                    descriptors: [pair.first.rawValue], expecting: SocketResult.self)
                peers.append(DescriptorBox(pair.second))
            }
        }
        self.apps = apps
        self.peers = peers
    }
}

/// `sockets` on a connection, its reply read as frames and not decoded: what it measures is
/// voipd's side.
final class RawLister {
    let connection: VoipdConnection
    private var nextID: UInt64 = 1_000_000
    private var buffer = [UInt8](repeating: 0, count: 1 << 20)

    init(connection: VoipdConnection) { self.connection = connection }

    /// Request → the last byte of the last frame, ns; and how many frames.
    func list() throws -> (UInt64, Int) {
        nextID += 1
        let packet = try WireCodec().packet(.sockets, AppQueryRequest(id: nextID))
        let started = MonotonicInstant.now
        guard case .processed = try Socket.send(connection.descriptor, bytes: packet, descriptors: []) else {
            throw BenchError("the request did not go")
        }
        let continued = Array("{\"id\":\(nextID),\"more\":true".utf8)
        var frames = 0
        var filled = 0
        var start = 0
        while true {
            // Whole frames in the buffer: looked at, then the next read.
            while filled - start >= Frame.headerSize {
                let length = Int(buffer[start]) | Int(buffer[start + 1]) << 8 | Int(buffer[start + 2]) << 16 | Int(buffer[start + 3]) << 24
                guard filled - start >= Frame.headerSize + length else { break }
                let body = start + Frame.headerSize
                frames += 1
                let more = length >= continued.count && buffer[body..<(body + continued.count)].elementsEqual(continued)
                start = body + length
                if !more {
                    guard start == filled else { throw BenchError("bytes after the last frame of the listing") }
                    return (MonotonicInstant.now.nanoseconds - started.nanoseconds, frames)
                }
            }
            if start > 0 {
                buffer.withUnsafeMutableBytes { bytes in
                    _ = memmove(bytes.baseAddress!, bytes.baseAddress! + start, filled - start)
                }
                filled -= start
                start = 0
            }
            let count = buffer.withUnsafeMutableBytes { bytes in
                Glibc.read(connection.descriptor.rawValue, bytes.baseAddress! + filled, bytes.count - filled)
            }
            guard count > 0 else { throw BenchError("voipd closed the connection during a listing (\(count < 0 ? String(cString: strerror(errno)) : "end of stream"))") }
            filled += count
        }
    }
}

/// The figures, ns per run.
struct HoldResult {
    let options: HoldOptions
    var registerSeconds = 0.0
    var listingWall: [UInt64] = []
    var listingCPU: [UInt64] = []
    var upgradeWall: [UInt64] = []
    var upgradeCPU: [UInt64] = []
    var frames = 0
    var rssBeforeKiB = 0
    var rssAfterListingsKiB = 0
    var rssAfterUpgradesKiB = 0
    var peakKiB = 0
    var loadAverage = ""

    private func milliseconds(_ values: [UInt64]) -> (p50: Double, max: Double) {
        guard !values.isEmpty else { return (0, 0) }
        return (median(values.map { Double($0) / 1e6 }), Double(values.max()!) / 1e6)
    }

    var lines: String {
        let n = Double(options.sockets)
        let (wall, wallMax) = milliseconds(listingWall), (cpu, cpuMax) = milliseconds(listingCPU)
        let (upWall, upWallMax) = milliseconds(upgradeWall), (upCPU, upCPUMax) = milliseconds(upgradeCPU)
        return """
        hold cpu=\(options.placement.rawValue): \(options.sockets) sockets, \(options.perApp) per app, registered in \(fixed(registerSeconds, 2)) s
        sockets listing (\(listingWall.count), \(frames) frames): request → last byte p50 \(fixed(wall, 2)) ms (max \(fixed(wallMax, 2))), \(fixed(wall * 1000 / n, 3)) us/socket | voipd CPU p50 \(fixed(cpu, 2)) ms (max \(fixed(cpuMax, 2))), \(fixed(cpu * 1000 / n, 3)) us/socket
        upgrade (\(upgradeWall.count)): request → reply p50 \(fixed(upWall, 1)) ms (max \(fixed(upWallMax, 1))) | voipd CPU p50 \(fixed(upCPU, 1)) ms (max \(fixed(upCPUMax, 1))), \(fixed(upCPU * 1000 / n, 2)) us/socket
        voipd VmRSS: \(rssBeforeKiB) KiB holding them, \(rssAfterListingsKiB) KiB after the listings (peak \(peakKiB) KiB), \(rssAfterUpgradesKiB) KiB after the upgrades
        load average \(loadAverage)
        """
    }

    var json: String {
        jsonLine(JSONFigures(cpuMode: options.placement.rawValue, sockets: options.sockets,
                             listingP50: Rounded(milliseconds(listingWall).p50), listingCPUP50: Rounded(milliseconds(listingCPU).p50),
                             listingFrames: frames,
                             upgradeP50: Rounded(milliseconds(upgradeWall).p50), upgradeCPUP50: Rounded(milliseconds(upgradeCPU).p50),
                             rssBeforeKiB: rssBeforeKiB, rssAfterListingsKiB: rssAfterListingsKiB, peakKiB: peakKiB,
                             rssAfterUpgradesKiB: rssAfterUpgradesKiB))
    }

    /// The JSON line: medians in ms, memory in KiB.
    private struct JSONFigures: Encodable {
        let test = "hold"
        var cpuMode, sockets: Int
        var listingP50, listingCPUP50: Rounded
        var listingFrames: Int
        var upgradeP50, upgradeCPUP50: Rounded
        var rssBeforeKiB, rssAfterListingsKiB, peakKiB, rssAfterUpgradesKiB: Int

        enum CodingKeys: String, CodingKey {
            case test, sockets
            case cpuMode = "cpu_mode", listingP50 = "listing_p50_ms", listingCPUP50 = "listing_cpu_p50_ms", listingFrames = "listing_frames"
            case upgradeP50 = "upgrade_p50_ms", upgradeCPUP50 = "upgrade_cpu_p50_ms"
            case rssBeforeKiB = "rss_before_kib", rssAfterListingsKiB = "rss_after_listings_kib", peakKiB = "peak_kib"
            case rssAfterUpgradesKiB = "rss_after_upgrades_kib"
        }
    }
}
