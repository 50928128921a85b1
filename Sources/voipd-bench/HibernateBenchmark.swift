import Glibc
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// `voipd-bench hibernate`: for each swap area and app size, a memory app stopped and woken
/// three ways (merely stopped; paged out; paged out and read ahead before it is continued),
/// with the floor's wake beside it. The bench is the supervisor here, not voipd: it holds
/// the app's socket, stops, pages out and continues the app itself, with the calls the
/// daemon will make (docs/LIFECYCLE.md, "Hibernated").
enum HibernateBenchmark {
    static func main(_ arguments: [String]) -> Int32 {
        runSubcommand("hibernate", arguments: arguments, run: run)
    }

    private static func run(_ options: HibernateOptions) throws {
        guard geteuid() == 0 else { throw BenchError("setting up swap needs root") }
        let directory = try TemporaryDirectory("voipd-bench")
        let floor = try WakeFloor.build(shared: options.shared, into: directory.path)
        // The app runs from a copy: the bench's own code pages stay mapped by the bench, and
        // paging out leaves alone what another process maps.
        let binary = directory.path + "/memory-app"
        try copyFile(BenchPaths.executable, to: binary)
        chmod(binary, 0o755)
        try pinCurrentThread(to: options.placement.supervisorCPU)
        let figures = try floor.run(children: 1, wakes: options.floorWakes, placement: options.placement, seed: 1, supervisorIsPeer: true)
        let floorWake = (p50: figures["wake_total_p50"]!, p99: figures["wake_total_p99"]!)
        progress("\(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPUs, load average \(WakeBenchmark.loadAverage()); "
                 + "floor (-n 1 -P -c \(options.placement.rawValue)): p50 \(fixed(floorWake.p50)) us p99 \(fixed(floorWake.p99)) us")
        for swap in options.swaps {
            let area = try setUp(swap, options: options, directory: directory.path)
            defer {
                do { try area?.remove() } catch { progress("could not remove the \(swap) swap area: \(error)") }
            }
            for megabytes in options.megabytes {
                var result = HibernateResult(swap: swap.rawValue, megabytes: megabytes, floor: floorWake)
                if let device = area?.zramDevice { result.swap = "zram (\(try ZramDevice.read(device).algorithm))" }
                try measure(&result, binary: binary, area: area, options: options)
                print(options.json ? result.json : result.lines)
                fflush(nil)
            }
        }
        progress("done; load average \(WakeBenchmark.loadAverage())")
    }

    /// The swap area of this run; nil for `none`, which refuses to run while swap is on.
    private static func setUp(_ swap: HibernateOptions.Swap, options: HibernateOptions, directory: String) throws -> TemporarySwap? {
        let others = try SwapSpace.current().areas
        let size = max(256, 3 * (options.megabytes.max() ?? 0))
        switch swap {
        case .none:
            guard others.isEmpty else { throw BenchError("--swap none: swap is on (\(others.map(\.path).joined(separator: ", ")))") }
            return nil
        case .zram:
            if !others.isEmpty { progress("other swap areas are on (\(others.map(\.path).joined(separator: ", "))); the bench's comes first") }
            return try TemporarySwap(.zram(algorithm: options.zramAlgorithm), megabytes: size)
        case .file:
            if !others.isEmpty { progress("other swap areas are on (\(others.map(\.path).joined(separator: ", "))); the bench's comes first") }
            return try TemporarySwap(.file(directory: directory), megabytes: size)
        }
    }

    /// One app: the cost of reading its memory, then each way of waking it.
    private static func measure(_ result: inout HibernateResult, binary: String, area: TemporarySwap?, options: HibernateOptions) throws {
        let app = try MemoryAppUnderTest(binary: binary, megabytes: result.megabytes, seed: UInt64(result.megabytes))
        defer { app.kill() }
        try app.stop()
        result.rollupReadMicroseconds = try timeMicroseconds(times: 20) { _ in _ = try ProcessMemory.of(app.pid) }
        result.countersReadMicroseconds = try timeMicroseconds(times: 20) { _ in _ = try MemoryCounters.of(app.pid) }
        for mode in HibernateResult.Mode.allCases {
            var samples = ModeSamples()
            for iteration in 0..<(options.wakes + 2) {
                try app.stop()
                var readAhead: () throws -> Void = {}
                if mode != .stopped {
                    let pagedOut = try pageOut(app, area: area)
                    if iteration >= 2 { samples.pageOuts.append(pagedOut) }
                    if mode == .pagedOutReadAhead {
                        readAhead = {
                            let started = MonotonicInstant.now
                            var advice = ProcessMemoryAdvice(.willNeed, regions: try MemoryMap.regions(of: app.pid))
                            try app.perform(&advice)
                            if iteration >= 2 { samples.readAheadMilliseconds.append((MonotonicInstant.now - started).seconds * 1000) }
                        }
                    }
                }
                let (read, restored) = try app.wake(beforeResume: readAhead)
                if iteration >= 2 {
                    samples.read.append(read)
                    samples.restored.append(restored)
                }
            }
            result.modes[mode] = samples
        }
    }

    /// Pages the stopped app out as the daemon will: its mappings read, the advice given in
    /// one step; the memory measured around it.
    private static func pageOut(_ app: MemoryAppUnderTest, area: TemporarySwap?) throws -> PageOutSample {
        let before = try MemoryCounters.of(app.pid)
        let zramBefore = try area?.zramDevice.map(ZramDevice.read)
        let started = MonotonicInstant.now
        var advice = ProcessMemoryAdvice(.pageOut, regions: try MemoryMap.regions(of: app.pid))
        try app.perform(&advice)
        let elapsed = MonotonicInstant.now - started
        let after = try MemoryCounters.of(app.pid)
        let zramAfter = try area?.zramDevice.map(ZramDevice.read)
        var sample = PageOutSample(milliseconds: elapsed.seconds * 1000, before: before, after: after, advised: advice.advisedBytes,
                                   refused: advice.refused.count)
        if let zramBefore, let zramAfter {
            sample.zramStored = Int64(zramAfter.storedBytes) - Int64(zramBefore.storedBytes)
            sample.zramMemory = Int64(zramAfter.memoryUsed) - Int64(zramBefore.memoryUsed)
        }
        return sample
    }

    /// The mean time of `times` runs of `body`, in microseconds.
    private static func timeMicroseconds(times: Int, _ body: (Int) throws -> Void) throws -> Double {
        let started = MonotonicInstant.now
        for index in 0..<times { try body(index) }
        return (MonotonicInstant.now - started).seconds * 1e6 / Double(times)
    }

    /// Copies a file (the bench's executable) in 1 MB reads and writes.
    private static func copyFile(_ source: String, to destination: String) throws {
        let input = try openFile(source, flags: O_RDONLY)
        let output = try openFile(destination, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o755)
        while case let chunk = try input.read(upTo: 1 << 20), !chunk.isEmpty { try output.writeAll(chunk) }
    }
}
