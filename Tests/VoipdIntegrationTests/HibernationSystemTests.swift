import Glibc
import TestAppMessages
import Testing
import VoipdSystem
import VoipdTestSupport

/// Swap set up by a test needs root; under CI running without it is a failure.
let isRoot = geteuid() == 0
/// Whether this kernel has zram devices (or can make them).
let hasZram = access("/sys/class/zram-control/hot_add", F_OK) == 0 || !ZramDevice.all().isEmpty

/// Issue 13's system layer without the daemon: a test app filled with a known pattern,
/// stopped, paged out with process_madvise into a swap area the test sets up, measured, and
/// resumed to read its memory back.
@Suite("Hibernation: paging a stopped app out and back", .serialized)
struct HibernationPageOutTests {
    @Test("a 10 MB app stopped and paged out into zram gives its memory back and reads it back intact",
          .enabled(if: (isRoot && hasZram) || runningUnderCI, "needs root and zram (with CI=true their absence is a failure)"))
    func smallAppIntoZram() throws {
        try pageOutAndBack(megabytes: 10, into: .zram(algorithm: nil))
    }

    @Test("a 10 MB app stopped and paged out into a swap file gives its memory back and reads it back intact",
          .enabled(if: isRoot || runningUnderCI, "needs root (with CI=true its absence is a failure)"))
    func smallAppIntoSwapFile() throws {
        let directory = try makeTemporaryDirectory("voipd-swapfile")
        defer { removeTree(directory) }
        try pageOutAndBack(megabytes: 10, into: .file(directory: directory))
    }

    @Test("a 100 MB app stopped and paged out into zram gives its memory back and reads it back intact",
          .enabled(if: (isRoot && hasZram) || runningUnderCI, "needs root and zram (with CI=true their absence is a failure)"))
    func largeAppIntoZram() throws {
        try pageOutAndBack(megabytes: 100, into: .zram(algorithm: nil))
    }

    /// Fills, stops, pages out, measures, resumes, checks.
    private func pageOutAndBack(megabytes: Int, into kind: TemporarySwap.Kind) throws {
        try #require(isRoot, "swapon needs root")
        if case .zram = kind { try #require(hasZram, "this kernel has no zram") }
        let size = UInt64(megabytes) << 20
        let swap = try TemporarySwap(kind, megabytes: max(256, 3 * megabytes))
        defer { #expect(throws: Never.self) { try swap.remove() } }
        let app = try StandaloneTestApp(name: "hibernate-\(megabytes)")
        defer { app.stop() }
        let seed = UInt64(megabytes) &* 7919
        try app.handle.send(.fillMemory(megabytes: megabytes, seed: seed))
        let filled = try app.handle.expect(\.filledMemory, timeout: .seconds(120))
        let written = filled.checksum
        #expect(filled.megabytes == megabytes)
        #expect(written == MemoryPattern.expectedChecksum(wordCount: megabytes << 17, seed: seed))

        try app.process.pidfd.stopChild()
        let before = try MemoryCounters.of(app.pid)
        let dirty = try ProcessMemory.of(app.pid)
        #expect(dirty.privateDirty >= size && dirty.swapped == 0, "\(dirty)")
        var advice = ProcessMemoryAdvice(.pageOut, regions: try MemoryMap.regions(of: app.pid))
        try advice.perform(on: app.process.pidfd)
        #expect(advice.isFinished && advice.refused.isEmpty, "refused: \(advice.refused)")
        let after = try MemoryCounters.of(app.pid)
        // The pattern's pages, and more of the app's own, left memory for the swap area.
        #expect(before.resident - after.resident >= size, "before \(before), after \(after)")
        #expect(after.swapped >= size, "before \(before), after \(after)")
        #expect(try ProcessMemory.of(app.pid).dirty >= dirty.privateDirty - (1 << 20), "still counted as the app's dirty memory")
        #expect(try swap.area()?.used ?? 0 >= size)
        if let device = swap.zramDevice {
            let zram = try ZramDevice.read(device)
            #expect(zram.storedBytes >= size, "\(zram)")
            #expect(zram.compressedBytes < zram.storedBytes / 2, "the pattern compresses: \(zram)")
        }
        #expect(ProcFS.state(of: app.pid) == "T", "paging out does not resume it")

        try app.process.pidfd.send(SIGCONT)
        try app.handle.send(.checksumMemory)
        #expect(try app.handle.expect(\.memoryChecksum, timeout: .seconds(120)) == written)
        #expect(try MemoryCounters.of(app.pid).residentAnonymous >= size, "the pages are back")
    }

    @Test("without swap only pages backed by files go: the anonymous memory stays resident",
          .enabled(if: (try? SwapSpace.current().areas.isEmpty) == true, "swap is on: the case without it cannot be shown"))
    func withoutSwap() throws {
        // No test's swap area comes and goes meanwhile.
        let noSwap = try SwapTestLock.withoutSwap()
        defer { withExtendedLifetime(noSwap) {} }
        let app = try StandaloneTestApp(name: "hibernate-noswap")
        defer { app.stop() }
        try app.handle.send(.fillMemory(megabytes: 10, seed: 3))
        let written = try app.handle.expect(\.filledMemory, timeout: .seconds(120)).checksum
        try app.process.pidfd.stopChild()
        let before = try MemoryCounters.of(app.pid)
        var advice = ProcessMemoryAdvice(.pageOut, regions: try MemoryMap.regions(of: app.pid))
        try advice.perform(on: app.process.pidfd)
        let after = try MemoryCounters.of(app.pid)
        #expect(advice.advisedBytes > 0 && advice.refused.isEmpty, "refused: \(advice.refused)")
        #expect(after.swapped == 0)
        #expect(after.residentAnonymous + (256 << 10) >= before.residentAnonymous, "before \(before), after \(after)")
        #expect(after.residentFile <= before.residentFile, "before \(before), after \(after)")
        try app.process.pidfd.send(SIGCONT)
        try app.handle.send(.checksumMemory)
        #expect(try app.handle.expect(\.memoryChecksum, timeout: .seconds(120)) == written)
    }
}

/// What process_madvise refuses, how the advice is cut into calls and slices: on regions
/// of the test's own process, mapped for the purpose (the kernel treats them as another
/// process's; paging out one's own memory needs no swap to be taken as advice).
@Suite("Hibernation: advice range by range")
struct MemoryAdviceTests {
    let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// `pages` of private anonymous memory, written.
    private func mapPages(_ pages: Int, flags: CInt = 0) throws -> UnsafeMutableRawPointer {
        guard let address = mmap(nil, pages * pageSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0),
              address != MAP_FAILED else { throw Errno.current("mmap") }
        memset(address, 0x5a, pages * pageSize)
        return address
    }

    private func region(_ address: UnsafeMutableRawPointer, pages: Int) -> MemoryRegion {
        let start = UInt(bitPattern: address)
        return MemoryRegion(start: start, end: start + UInt(pages * pageSize), isReadable: true, isWritable: true,
                            isExecutable: false, isShared: false, inode: 0, path: "")
    }

    @Test("a locked region is refused with EINVAL, an unmapped one with ENOMEM, the kernel's own are never asked, the rest is advised")
    func refusals() throws {
        let before = try mapPages(4)
        // Locked by mmap, not mlock: under AddressSanitizer mlock does nothing and returns 0.
        let locked = try mapPages(4, flags: MAP_LOCKED)
        let after = try mapPages(4)
        // Never mapped: a range this process unmapped would be free for the next mmap of any
        // of its threads (tests run in parallel) and could be mapped again by the time it is
        // advised. The first pages above 0 are never given out unless asked for by address.
        let gone = try #require(UnsafeMutableRawPointer(bitPattern: pageSize))
        #expect(msync(gone, 4 * pageSize, MS_ASYNC) == -1 && errno == ENOMEM, "nothing is mapped at \(gone)")
        defer {
            for address in [before, locked, after] { munmap(address, 4 * pageSize) }
        }
        let kernel = try MemoryMap.regions(of: getpid()).filter(\.isKernelMapping)
        #expect(kernel.contains { $0.path == "[vdso]" })
        let process = try PidFd(pid: getpid())
        var advice = ProcessMemoryAdvice(.pageOut, regions: kernel + [before, locked, after, gone].map { region($0, pages: 4) })
        #expect(advice.remainingBytes == UInt64(16 * pageSize), "the kernel's mappings are left out")
        try advice.perform(on: process)
        #expect(advice.isFinished && advice.remainingBytes == 0)
        #expect(advice.advisedBytes == UInt64(8 * pageSize))
        #expect(advice.refused.map(\.start) == [UInt(bitPattern: locked), UInt(bitPattern: gone)])
        #expect(advice.refused.map(\.error.rawValue) == [EINVAL, ENOMEM])
        #expect(advice.refused.allSatisfy { $0.length == UInt(4 * pageSize) })
    }

    @Test("advice goes in calls of at most IOV_MAX ranges, and in slices of a byte budget")
    func batchesAndSlices() throws {
        let limit = Int(sysconf(Int32(_SC_IOV_MAX)))
        let pages = 2 * limit + 5
        let base = try mapPages(pages)
        defer { munmap(base, pages * pageSize) }
        let regions = (0..<pages).map { region(base + $0 * pageSize, pages: 1) }
        let process = try PidFd(pid: getpid())

        var whole = ProcessMemoryAdvice(.cold, regions: regions)
        #expect(try whole.perform(on: process) == UInt64(pages * pageSize))
        #expect(whole.calls == 3 && whole.refused.isEmpty)

        var sliced = ProcessMemoryAdvice(.cold, regions: [region(base, pages: pages)])
        #expect(try sliced.perform(on: process, upTo: UInt64(100 * pageSize) + 1) == UInt64(100 * pageSize), "whole pages only")
        #expect(sliced.remainingBytes == UInt64((pages - 100) * pageSize) && !sliced.isFinished)
        while !sliced.isFinished { try sliced.perform(on: process, upTo: UInt64(1000 * pageSize)) }
        #expect(sliced.advisedBytes == UInt64(pages * pageSize) && sliced.calls == 3, "100 pages, then 1000 and the rest")
    }

    @Test("an ended process is ESRCH for the whole advice")
    func endedProcess() throws {
        let child = try TestProcess(["/bin/true"])
        _ = try child.waitForExit(.seconds(20))
        let region = region(try mapPages(1), pages: 1)
        var advice = ProcessMemoryAdvice(.pageOut, regions: [region])
        #expect(throws: Errno(ESRCH)) { try advice.perform(on: child.pidfd) }
        munmap(UnsafeMutableRawPointer(bitPattern: region.start), pageSize)
    }
}
