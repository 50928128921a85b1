import Glibc
import VoipdSystem
import VoipdVocabulary

/// The floor's random number generator (xorshift64), so that both pick the same apps in
/// the same order for the same seed.
struct XorShift {
    private var state: UInt64

    init(seed: UInt64) { state = seed | 1 }

    mutating func next() -> UInt64 {
        var x = state
        x ^= x << 13
        x ^= x >> 7
        x ^= x << 17
        state = x
        return x
    }
}

/// The timed wakes, as the floor does them: pick an app at random, write an 8-byte
/// CLOCK_MONOTONIC stamp to its VoIP socket (t0), and take the time its `read` returned
/// (t2) from its report. Between wakes, wait until voipd has suspended the app again, so
/// that every wake starts from a suspended app. The first min(wakes/10, 200) are warm-up.
struct WakeLoop {
    let fleet: AppFleet
    let wakes: Int
    let seed: UInt64

    /// write → read latencies in nanoseconds.
    func run() throws -> [UInt64] {
        let count = fleet.peers.count
        let warmUp = min(wakes / 10, 200)
        var random = XorShift(seed: seed)
        var samples: [UInt64] = []
        samples.reserveCapacity(wakes)
        for iteration in 0..<(wakes + warmUp) {
            let index = Int(random.next() % UInt64(count))
            var stamp = MonotonicInstant.now.nanoseconds
            guard write(fleet.peers[index].descriptor.rawValue, &stamp, 8) == 8 else { throw Errno.current("write(stamp)") }
            let (t0, t2) = try report(from: index)
            guard t0 == stamp else { throw BenchError("\(AppFleet.name(index)) reported stamp \(t0), not \(stamp)") }
            try fleet.waitForSuspension(of: index)
            if iteration >= warmUp { samples.append(t2 &- t0) }
        }
        return samples
    }

    /// The next report of the app: (t0, t2). Other lines on the pipe are the apps' messages.
    private func report(from index: Int) throws -> (UInt64, UInt64) {
        while true {
            guard let line = try fleet.reports.next(timeoutMilliseconds: 10_000) else {
                throw BenchError("\(AppFleet.name(index)) did not report a read within 10 s (voipd says: \(fleet.describe(index)))")
            }
            let fields = line.split(separator: " ")
            guard fields.count == 4, fields[0] == "W", let t0 = UInt64(fields[2]), let t2 = UInt64(fields[3]) else {
                progress("app: \(line)")
                continue
            }
            guard Int(fields[1]) == index else { throw BenchError("woke \(AppFleet.name(index)) but \(line) reported") }
            return (t0, t2)
        }
    }
}

