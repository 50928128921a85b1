import Glibc
import VoipdSystem
import VoipdVocabulary

/// `voipd-bench freeze-child INDEX CPU`: a child of the freeze benchmark, as the floor's
/// children: blocked in read() on its socket (standard input); for each 8 bytes read, writes
/// a ``FreezeReport`` (its index and when the read returned) to standard output, a pipe the
/// children share (24 bytes, written whole). Pinned to CPU, or anywhere for "-".
enum FreezeChild {
    static func main(_ arguments: [String]) -> Int32 {
        guard arguments.count == 2, let index = UInt32(arguments[0]) else {
            writeError("usage: voipd-bench freeze-child INDEX CPU|-\n")
            return 2
        }
        do {
            try pinCurrentThread(to: Int(arguments[1]))
        } catch {
            writeError("voipd-bench freeze-child: \(error)\n")
            return 1
        }
        var stamp: UInt64 = 0
        while true {
            var got = 0
            while got < 8 {
                let n = withUnsafeMutableBytes(of: &stamp) { read(0, $0.baseAddress! + got, 8 - got) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return 0 }
                got += n
            }
            var report = FreezeReport(index: index, readReturned: MonotonicInstant.now.nanoseconds)
            guard withUnsafeBytes(of: &report, { write(1, $0.baseAddress, $0.count) }) == MemoryLayout<FreezeReport>.size else { return 3 }
        }
    }
}

/// What a freeze child writes after each read.
struct FreezeReport {
    var index: UInt32
    var padding: UInt32 = 0
    /// CLOCK_MONOTONIC in ns when its read() returned.
    var readReturned: UInt64
    var spare: UInt64 = 0
}
