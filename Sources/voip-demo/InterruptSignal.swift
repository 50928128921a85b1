import Glibc
import VoipdSystem

// The write end of the interrupt pipe, for the signal handler (which can capture nothing).
nonisolated(unsafe) private var interruptWriter: Int32 = -1

/// SIGINT, SIGTERM and SIGHUP as an event: the demo stops what it started and reports
/// the interruption instead of dying with its children left behind.
final class InterruptSignal: EventSource {
    private let pipe: DescriptorPair

    init() throws {
        pipe = try makePipe()
        try pipe.second.setNonBlocking()
        interruptWriter = pipe.second.rawValue
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            Glibc.signal(signal) { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(interruptWriter, &byte, 1)
            }
        }
    }

    var descriptors: [Int32] { [pipe.first.rawValue] }

    func service(_ fd: Int32) throws {
        let bytes = try pipe.first.read(upTo: 16)
        throw DemoFailure("interrupted by \(signalName(CInt(bytes.first ?? 0)))")
    }
}
