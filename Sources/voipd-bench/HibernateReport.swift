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
        var figures = JSONFigures(swap: swap, megabytes: megabytes, smapsRollupRead: Rounded(rollupReadMicroseconds, 1),
                              statusRead: Rounded(countersReadMicroseconds, 1), floorP50: Rounded(floor.p50), floorP99: Rounded(floor.p99))
        if let pageOut {
            let (before, after) = (pageOut.before, pageOut.after)
            figures.pageOut = Rounded(pageOut.milliseconds, 2)
            figures.residentBefore = .mebibytes(Double(before.resident))
            figures.residentAfter = .mebibytes(Double(after.resident))
            figures.anonymousBefore = .mebibytes(Double(before.residentAnonymous))
            figures.anonymousAfter = .mebibytes(Double(after.residentAnonymous))
            figures.fileBefore = .mebibytes(Double(before.residentFile))
            figures.fileAfter = .mebibytes(Double(after.residentFile))
            figures.swapped = .mebibytes(Double(after.swapped))
            figures.givenBack = .mebibytes(pageOut.givenBack)
            figures.zramMemory = .mebibytes(pageOut.zramMemory)
            figures.netFreed = .mebibytes(pageOut.netFreed)
            figures.refusedRanges = pageOut.refused
        }
        /// p50 and max of write → read and of write → all memory read, if `mode` was measured.
        func latencies(_ mode: Mode) -> (Rounded?, Rounded?, Rounded?, Rounded?) {
            guard modes[mode] != nil else { return (nil, nil, nil, nil) }
            let read = latency(mode, \.read), restored = latency(mode, \.restored)
            return (Rounded(read.p50), Rounded(read.microseconds(100)), Rounded(restored.p50), Rounded(restored.microseconds(100)))
        }
        (figures.stoppedReadP50, figures.stoppedReadMax, figures.stoppedRestoredP50, figures.stoppedRestoredMax) = latencies(.stopped)
        (figures.pagedOutReadP50, figures.pagedOutReadMax, figures.pagedOutRestoredP50, figures.pagedOutRestoredMax) = latencies(.pagedOut)
        (figures.readAheadReadP50, figures.readAheadReadMax, figures.readAheadRestoredP50, figures.readAheadRestoredMax) = latencies(.pagedOutReadAhead)
        if let readAhead = modes[.pagedOutReadAhead]?.readAheadMilliseconds, !readAhead.isEmpty {
            figures.readAhead = Rounded(median(readAhead), 2)
        }
        return jsonLine(figures)
    }

    /// The JSON line's figures; a page-out's only when the app was paged out, a mode's
    /// latencies (keys after the mode's name) only when it was measured.
    private struct JSONFigures: Encodable {
        let test = "hibernate"
        var swap: String
        var megabytes: Int
        var smapsRollupRead, statusRead, floorP50, floorP99: Rounded
        var pageOut, residentBefore, residentAfter, anonymousBefore, anonymousAfter, fileBefore, fileAfter: Rounded?
        var swapped, givenBack, zramMemory, netFreed: Rounded?
        var refusedRanges: Int?
        var stoppedReadP50, stoppedReadMax, stoppedRestoredP50, stoppedRestoredMax: Rounded?
        var pagedOutReadP50, pagedOutReadMax, pagedOutRestoredP50, pagedOutRestoredMax: Rounded?
        var readAheadReadP50, readAheadReadMax, readAheadRestoredP50, readAheadRestoredMax: Rounded?
        var readAhead: Rounded?

        enum CodingKeys: String, CodingKey {
            case test, swap, megabytes
            case smapsRollupRead = "smaps_rollup_read_us", statusRead = "status_read_us", floorP50 = "floor_p50_us", floorP99 = "floor_p99_us"
            case pageOut = "page_out_ms", residentBefore = "resident_before_mb", residentAfter = "resident_after_mb"
            case anonymousBefore = "anonymous_before_mb", anonymousAfter = "anonymous_after_mb"
            case fileBefore = "file_before_mb", fileAfter = "file_after_mb", swapped = "swapped_mb", givenBack = "given_back_mb"
            case zramMemory = "zram_memory_mb", netFreed = "net_freed_mb", refusedRanges = "refused_ranges", readAhead = "read_ahead_ms"
            case stoppedReadP50 = "stopped_read_p50_us", stoppedReadMax = "stopped_read_max_us"
            case stoppedRestoredP50 = "stopped_restored_p50_us", stoppedRestoredMax = "stopped_restored_max_us"
            case pagedOutReadP50 = "paged_out_read_p50_us", pagedOutReadMax = "paged_out_read_max_us"
            case pagedOutRestoredP50 = "paged_out_restored_p50_us", pagedOutRestoredMax = "paged_out_restored_max_us"
            case readAheadReadP50 = "paged_out_willneed_read_p50_us", readAheadReadMax = "paged_out_willneed_read_max_us"
            case readAheadRestoredP50 = "paged_out_willneed_restored_p50_us", readAheadRestoredMax = "paged_out_willneed_restored_max_us"
        }
    }
}
