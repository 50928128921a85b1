import VoipdSystem

/// One page-out of the stopped app: how long it took and what it changed.
struct PageOutSample {
    var milliseconds: Double
    var before: MemoryCounters
    var after: MemoryCounters
    /// What `process_madvise` took the advice for, and the ranges it refused.
    var advised: UInt64
    var refused: Int
    /// What the zram device gained: stored (uncompressed) and the memory it takes.
    var zramStored: Int64 = 0
    var zramMemory: Int64 = 0

    /// Resident memory the app gave back.
    var givenBack: Int64 { Int64(before.resident) - Int64(after.resident) }
    /// What the machine gained: given back, less what zram keeps in memory for it.
    var netFreed: Int64 { givenBack - zramMemory }
}

/// The samples of one way of waking the app.
struct ModeSamples {
    /// write → read returned, and write → all memory read, in nanoseconds.
    var read: [UInt64] = []
    var restored: [UInt64] = []
    var pageOuts: [PageOutSample] = []
    var readAheadMilliseconds: [Double] = []
}

/// The figures of one swap area and app size.
struct HibernateResult {
    enum Mode: String, CaseIterable {
        case stopped
        case pagedOut = "paged-out"
        case pagedOutReadAhead = "paged-out+willneed"
    }

    var swap: String
    var megabytes: Int
    var floor: (p50: Double, p99: Double)
    var rollupReadMicroseconds = 0.0
    var countersReadMicroseconds = 0.0
    var modes: [Mode: ModeSamples] = [:]

    private func megabytes(_ bytes: Int64) -> String { fixed(Double(bytes) / 1_048_576, 1) }
    private func megabytes(_ bytes: UInt64) -> String { megabytes(Int64(bytes)) }

    private var pageOuts: [PageOutSample] { (modes[.pagedOut]?.pageOuts ?? []) + (modes[.pagedOutReadAhead]?.pageOuts ?? []) }

    /// Medians over every page-out of the run.
    private var pageOut: (milliseconds: Double, before: MemoryCounters, after: MemoryCounters, givenBack: Double, zramMemory: Double,
                          netFreed: Double, refused: Int)? {
        let samples = pageOuts
        guard !samples.isEmpty else { return nil }
        func medianCounters(_ path: KeyPath<PageOutSample, MemoryCounters>) -> MemoryCounters {
            let values = samples.map { $0[keyPath: path] }
            func middle(_ field: KeyPath<MemoryCounters, UInt64>) -> UInt64 { UInt64(median(values.map { Double($0[keyPath: field]) })) }
            return MemoryCounters(resident: middle(\.resident), residentAnonymous: middle(\.residentAnonymous), residentFile: middle(\.residentFile),
                                  residentShared: middle(\.residentShared), swapped: middle(\.swapped), locked: middle(\.locked))
        }
        return (median(samples.map(\.milliseconds)), medianCounters(\.before), medianCounters(\.after),
                median(samples.map { Double($0.givenBack) }), median(samples.map { Double($0.zramMemory) }),
                median(samples.map { Double($0.netFreed) }), samples.map(\.refused).max() ?? 0)
    }

    private func latency(_ mode: Mode, _ path: KeyPath<ModeSamples, [UInt64]>) -> Percentiles {
        Percentiles(nanoseconds: modes[mode]?[keyPath: path] ?? [])
    }

    var lines: String {
        var text = "hibernate swap=\(swap) app=\(megabytes)MB"
        if let pageOut {
            let mb = { (bytes: Double) in fixed(bytes / 1_048_576, 1) }
            let (before, after) = (pageOut.before, pageOut.after)
            text += ": page-out \(fixed(pageOut.milliseconds, 1)) ms; resident \(megabytes(before.resident)) → \(megabytes(after.resident)) MB"
                + " (anonymous \(megabytes(before.residentAnonymous)) → \(megabytes(after.residentAnonymous)),"
                + " file \(megabytes(before.residentFile)) → \(megabytes(after.residentFile)));"
                + " \(mb(pageOut.givenBack)) MB given back, in swap \(megabytes(after.swapped)) MB"
            if pageOut.zramMemory != 0 { text += ", zram keeps \(mb(pageOut.zramMemory)) MB: \(mb(pageOut.netFreed)) MB freed" }
            if pageOut.refused > 0 { text += ", \(pageOut.refused) ranges refused" }
        }
        text += "\n  reading its memory: smaps_rollup \(fixed(rollupReadMicroseconds, 1)) us, status \(fixed(countersReadMicroseconds, 1)) us"
        for (name, path) in [("write → read", \ModeSamples.read), ("write → all memory read", \ModeSamples.restored)] {
            text += "\n  \(name):"
            for mode in Mode.allCases where modes[mode] != nil {
                let figures = latency(mode, path)
                text += " \(mode.rawValue) p50 \(fixed(figures.p50 / 1000, 2)) ms max \(fixed(figures.microseconds(100) / 1000, 2)) ms;"
            }
        }
        let read = latency(.stopped, \.read)
        text += "\n  floor p50 \(fixed(floor.p50)) us p99 \(fixed(floor.p99)) us; stopped/floor p50 \(fixed(read.p50 / floor.p50, 2))"
        if modes[.pagedOut] != nil { text += ", paged-out/floor p50 \(fixed(latency(.pagedOut, \.read).p50 / floor.p50, 0))" }
        if let readAhead = modes[.pagedOutReadAhead]?.readAheadMilliseconds, !readAhead.isEmpty {
            text += "\n  read-ahead (MADV_WILLNEED before SIGCONT) took p50 \(fixed(median(readAhead), 2)) ms"
        }
        return text
    }

    var json: String {
        var fields: [(String, String)] = [("test", "\"hibernate\""), ("swap", "\"\(swap)\""), ("megabytes", "\(megabytes)"),
                                          ("smaps_rollup_read_us", fixed(rollupReadMicroseconds, 1)),
                                          ("status_read_us", fixed(countersReadMicroseconds, 1)),
                                          ("floor_p50_us", fixed(floor.p50)), ("floor_p99_us", fixed(floor.p99))]
        if let pageOut {
            let (before, after) = (pageOut.before, pageOut.after)
            fields += [("page_out_ms", fixed(pageOut.milliseconds, 2)), ("resident_before_mb", megabytes(before.resident)),
                       ("resident_after_mb", megabytes(after.resident)), ("anonymous_before_mb", megabytes(before.residentAnonymous)),
                       ("anonymous_after_mb", megabytes(after.residentAnonymous)), ("file_before_mb", megabytes(before.residentFile)),
                       ("file_after_mb", megabytes(after.residentFile)), ("swapped_mb", megabytes(after.swapped)),
                       ("given_back_mb", fixed(pageOut.givenBack / 1_048_576, 1)), ("zram_memory_mb", fixed(pageOut.zramMemory / 1_048_576, 1)),
                       ("net_freed_mb", fixed(pageOut.netFreed / 1_048_576, 1)), ("refused_ranges", "\(pageOut.refused)")]
        }
        for mode in Mode.allCases where modes[mode] != nil {
            let key = mode.rawValue.replacingOccurrences(of: "-", with: "_").replacingOccurrences(of: "+", with: "_")
            let read = latency(mode, \.read)
            let restored = latency(mode, \.restored)
            fields += [("\(key)_read_p50_us", fixed(read.p50)), ("\(key)_read_max_us", fixed(read.microseconds(100))),
                       ("\(key)_restored_p50_us", fixed(restored.p50)), ("\(key)_restored_max_us", fixed(restored.microseconds(100)))]
        }
        if let readAhead = modes[.pagedOutReadAhead]?.readAheadMilliseconds, !readAhead.isEmpty {
            fields.append(("read_ahead_ms", fixed(median(readAhead), 2)))
        }
        return jsonObject(fields)
    }
}
