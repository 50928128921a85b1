import Glibc
import VoipdSystem
import VoipdVocabulary

/// One child of the freeze benchmark: its cgroup, the bench's end of its socket, its pidfd.
final class FreezeFleetChild {
    let cgroup: AppCgroup
    let socket: FileDescriptor
    let process: PidFd

    init(cgroup: consuming AppCgroup, socket: consuming FileDescriptor, process: consuming PidFd) {
        self.cgroup = cgroup
        self.socket = socket
        self.process = process
    }
}

/// How a freeze was confirmed (``FreezeFleet/confirm(_:)``).
enum FreezeConfirmed {
    /// The read right after the write saw it frozen.
    case atOnce
    /// A re-read on FreezeConfirmation's timer.
    case byTimer
    /// A read after cgroup.events' EPOLLPRI.
    case byNotification
}

/// The figures of a run of thaw/freeze cycles, in ns.
struct FreezeCycles {
    var thawWrite: [UInt64] = []
    var thawToRun: [UInt64] = []
    var freezeWrite: [UInt64] = []
    var freezeToConfirmed: [UInt64] = []
    var confirmed: [FreezeConfirmed: Int] = [:]
    /// Reads of the state file after the first, over all freezes.
    var rereads = 0
}

/// Children blocked in read(), each in a cgroup of its own, frozen; thawed and frozen again
/// one at a time through VoipdSystem's AppCgroup, confirmed as voipd's loop will: a read at
/// once, then re-reads on a timerfd on FreezeConfirmation's schedule, then (v2) the
/// cgroup's EPOLLPRI in the same epoll set.
final class FreezeFleet {
    let freezer: CgroupFreezer
    private(set) var children: [FreezeFleetChild] = []
    private let reports: FileDescriptor
    private let epoll: Epoll
    private let timer: TimerFd
    private static let eventsToken: UInt64 = 1
    private static let timerToken: UInt64 = 2

    /// The confirmation's first timed re-read.
    let firstDelay: Duration

    init(freezer: CgroupFreezer, count: Int, placement: CPUPlacement, firstDelay: Duration = FreezeConfirmation.defaultFirstDelay) throws {
        self.freezer = freezer
        self.firstDelay = firstDelay
        let pipe = try makePipe()
        reports = pipe.first
        epoll = try Epoll(maxEventsPerWait: 4)
        timer = try TimerFd()
        try epoll.add(timer.descriptor, events: .readable, token: Self.timerToken)
        let cpu = placement.peerCPU.map(String.init) ?? "-"
        for index in 0..<count {
            let cgroup = try freezer.makeAppCgroup(for: "c\(index)")
            let pair = try Socket.pair()
            let process = try spawn(SpawnRequest(arguments: [BenchPaths.executable, "freeze-child", "\(index)", cpu], environment: [],
                                                 standardInput: pair.second.rawValue, standardOutput: pipe.second.rawValue,
                                                 cgroup: try cgroup.spawnTarget()))
            children.append(FreezeFleetChild(cgroup: cgroup, socket: pair.first, process: process))
        }
        // Each child answers once (it is in its read loop), then is frozen.
        for child in children {
            try child.socket.writeAll(withUnsafeBytes(of: MonotonicInstant.now.nanoseconds) { Array($0) })
            _ = try readReport()
            try child.cgroup.freeze()
            _ = try confirm(child)
        }
    }

    /// `cycles` thaw/freeze cycles of children picked at random (the floor's xorshift); the
    /// first tenth (at most 200) are a warm-up, not counted.
    func cycle(_ cycles: Int, seed: UInt64) throws -> FreezeCycles {
        var random = FloorRandom(seed: seed)
        var result = FreezeCycles()
        let warmUp = min(cycles / 10, 200)
        for iteration in 0..<(cycles + warmUp) {
            let child = children[Int(random.next() % UInt64(children.count))]
            // Data arrives while it is frozen: nothing runs until the thaw.
            try child.socket.writeAll(withUnsafeBytes(of: MonotonicInstant.now.nanoseconds) { Array($0) })
            let thawStart = MonotonicInstant.now.nanoseconds
            try child.cgroup.thaw()
            let thawEnd = MonotonicInstant.now.nanoseconds
            let report = try readReport()
            let freezeStart = MonotonicInstant.now.nanoseconds
            try child.cgroup.freeze()
            let freezeEnd = MonotonicInstant.now.nanoseconds
            let (how, rereads) = try confirm(child)
            let confirmed = MonotonicInstant.now.nanoseconds
            guard iteration >= warmUp else { continue }
            result.thawWrite.append(thawEnd - thawStart)
            result.thawToRun.append(report.readReturned &- thawStart)
            result.freezeWrite.append(freezeEnd - freezeStart)
            result.freezeToConfirmed.append(confirmed - freezeStart)
            result.confirmed[how, default: 0] += 1
            result.rereads += rereads
        }
        return result
    }

    /// Cycles whose freezes are confirmed by cgroup.events' notification alone (as the
    /// floor's `-w poll`): what the kernel's rate limit costs without re-reads. Returns the
    /// freeze → confirmed times in ns.
    func cycleByNotificationOnly(_ cycles: Int, seed: UInt64) throws -> [UInt64] {
        var random = FloorRandom(seed: seed)
        var times: [UInt64] = []
        for _ in 0..<cycles {
            let child = children[Int(random.next() % UInt64(children.count))]
            try child.socket.writeAll(withUnsafeBytes(of: MonotonicInstant.now.nanoseconds) { Array($0) })
            try child.cgroup.thaw()
            _ = try readReport()
            guard child.cgroup.notifiesChanges else { throw BenchError("cgroup v1 does not notify") }
            // Cleared, then watched, then frozen.
            _ = try child.cgroup.isFrozen()
            try epoll.add(child.cgroup.stateFile, events: .priority, token: Self.eventsToken)
            let start = MonotonicInstant.now.nanoseconds
            try child.cgroup.freeze()
            var frozen = false
            while !frozen {
                try epoll.wait(timeoutMilliseconds: 1000) { ready in
                    if ready.token == Self.eventsToken { frozen = try child.cgroup.isFrozen() }
                }
            }
            times.append(MonotonicInstant.now.nanoseconds - start)
            try epoll.remove(child.cgroup.stateFile)
        }
        return times
    }

    /// Confirms a freeze without blocking the loop on anything but epoll, as voipd's
    /// `awaitFreeze` does: a read at once; then re-reads on the timer, armed on
    /// FreezeConfirmation's schedule; once they are over (v2), the cgroup's events file
    /// registered for EPOLLPRI (only while a freeze awaits: kernfs raises EPOLLERR, which
    /// epoll always reports, at every change, thaws included). Returns how, and the re-reads
    /// it took.
    func confirm(_ child: FreezeFleetChild) throws -> (FreezeConfirmed, Int) {
        if try child.cgroup.isFrozen() { return (.atOnce, 0) }
        var schedule = FreezeConfirmation(version: child.cgroup.version, firstDelay: firstDelay)
        var watched = false
        defer { if watched { try? epoll.remove(child.cgroup.stateFile) } }
        // The next look: a timed re-read while the schedule has one, then the notification.
        func awaitNext() throws {
            if let delay = schedule.nextDelay() {
                try timer.arm(at: .now + delay)
            } else if schedule.watchesNotification && !watched {
                try epoll.add(child.cgroup.stateFile, events: .priority, token: Self.eventsToken)
                watched = true
            }
        }
        try awaitNext()
        var rereads = 0
        var how: FreezeConfirmed?
        while how == nil {
            var wokenBy: UInt64 = 0
            epoll.wait(timeoutMilliseconds: 10_000) { wokenBy = max(wokenBy, $0.token) }
            guard wokenBy != 0 else { throw BenchError("\(child.cgroup.path) not frozen after 10 s") }
            rereads += 1
            if try child.cgroup.isFrozen() {
                how = wokenBy == Self.timerToken ? .byTimer : .byNotification
            } else if wokenBy == Self.timerToken {
                _ = try timer.acknowledge()
                try awaitNext()
            }
        }
        try timer.disarm()
        _ = try timer.acknowledge()
        return (how!, rereads)
    }

    /// Reads one child's report.
    private func readReport() throws -> FreezeReport {
        var report = FreezeReport(index: 0, readReturned: 0)
        var got = 0
        let size = MemoryLayout<FreezeReport>.size
        while got < size {
            // A blocking pipe: it never says "would block".
            let result = try withUnsafeMutableBytes(of: &report) { raw throws(Errno) in
                try reports.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[got...]))
            }
            guard case .processed(let n) = result, n > 0 else { throw BenchError("a freeze child died") }
            got += n
        }
        return report
    }

    /// Kills every child with its cgroup, waits for each, removes the cgroups.
    func tearDown() {
        for child in children {
            try? child.cgroup.killAll()
            _ = try? child.process.waitForExit()
        }
        // Each process has left its cgroup by the time its pidfd says it exited.
        for child in children { try? child.cgroup.remove() }
        children.removeAll()
    }
}

/// The floor's random choice of a child: xorshift64 from `seed | 1`.
struct FloorRandom {
    private var state: UInt64

    init(seed: UInt64) { state = seed | 1 }

    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }
}
