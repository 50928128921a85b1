import CVoipd
import Glibc
import TestAppMessages
import VoipdSystem
import VoipdVocabulary

/// `voipd-bench memory-app --megabytes N --seed S --parent PID`: the app of the hibernation
/// benchmark. It maps N MB of anonymous memory, writes ``MemoryPattern`` over it and says
/// `READY CHECKSUM` on standard output (the bench's pipe); then, for each 8-byte stamp `t0`
/// it reads from its socket (descriptor 3, a blocking `read`), it notes when the read
/// returned (`t2`), reads all its memory for the checksum, notes that (`t3`), and reports
/// `W t0 t2 t3 CHECKSUM`. It dies with the bench (`PR_SET_PDEATHSIG`, `SIGKILL`: a stopped
/// process ignores every other signal until it is continued).
enum MemoryApp {
    static func main(_ arguments: [String]) -> Int32 {
        var megabytes: Int?
        var seed: UInt64 = 1
        var parent: pid_t?
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--megabytes": megabytes = iterator.next().flatMap { Int($0) }
            case "--seed": seed = iterator.next().flatMap { UInt64($0) } ?? seed
            case "--parent": parent = iterator.next().flatMap { pid_t($0) }
            default: return fail("unknown argument \(argument)")
            }
        }
        guard let megabytes, let parent else { return fail("usage: voipd-bench memory-app --megabytes N [--seed S] --parent PID") }
        guard voipd_prctl_set_pdeathsig(SIGKILL) == 0, getppid() == parent else { return fail("the bench is gone") }
        do {
            let memory = try PatternedMemory(megabytes: megabytes, seed: seed)
            try report("READY \(memory.checksum())\n")
            var stamp: UInt64 = 0
            while true {
                let count = try withUnsafeMutableBytes(of: &stamp) { raw in
                    try valueOrErrno("read(3)") { read(3, raw.baseAddress, 8) }
                }
                let readReturned = MonotonicInstant.now.nanoseconds
                guard count == 8 else { return count == 0 ? 0 : fail("a short stamp (\(count) bytes)") }
                let checksum = memory.checksum()
                let restored = MonotonicInstant.now.nanoseconds
                try report("W \(stamp) \(readReturned) \(restored) \(checksum)\n")
            }
        } catch {
            return fail("\(error)")
        }
    }

    /// One write of less than PIPE_BUF bytes.
    private static func report(_ line: String) throws {
        var bytes = Array(line.utf8)
        _ = try valueOrErrno("write(report)") { write(1, &bytes, bytes.count) }
    }

    private static func fail(_ message: String) -> Int32 {
        writeError("voipd-bench memory-app: \(message)\n")
        return 1
    }
}

/// The bench's side of one memory app: the process (by pidfd), the bench's end of its
/// socket (the peer writes stamps there), the bench's copy of the app's end in an epoll set
/// (as a supervisor holds an app's socket), and the app's reports.
final class MemoryAppUnderTest {
    private let pidfd: PidFd
    private let peer: FileDescriptor
    private let held: FileDescriptor
    private let epoll: Epoll
    private let reports: LineReader
    /// The checksum over the app's memory as it wrote it.
    private(set) var checksum: UInt64 = 0

    /// Starts `binary memory-app` (a copy of this executable, so that its code is the app's
    /// alone as a real app's is, and paging out can drop it) and waits for its `READY`.
    init(binary: String, megabytes: Int, seed: UInt64) throws {
        let pair = try Socket.pair(type: Socket.streamType)
        peer = pair.first
        held = pair.second
        let pipe = try makePipe()
        let readEnd = pipe.first
        let writeEnd = pipe.second
        pidfd = try spawn(SpawnRequest(arguments: [binary, "memory-app", "--megabytes", "\(megabytes)", "--seed", "\(seed)",
                                                   "--parent", "\(getpid())"],
                                       environment: currentEnvironment(), standardOutput: writeEnd.rawValue,
                                       extraDescriptors: [held.rawValue]))
        try writeEnd.close()
        reports = LineReader(readEnd)
        epoll = try Epoll(maxEventsPerWait: 1)
        try epoll.add(held, events: .readable, token: 1)
        // From here a failure ends the app in deinit.
        guard let line = try reports.next(timeoutMilliseconds: 120_000), line.hasPrefix("READY "),
              let written = UInt64(line.dropFirst(6)) else {
            throw BenchError("the memory app (\(megabytes) MB) did not start")
        }
        checksum = written
        guard written == MemoryPattern.expectedChecksum(wordCount: megabytes << 17, seed: seed) else {
            throw BenchError("the memory app wrote checksum \(written), not the pattern's")
        }
    }

    var pid: pid_t { pidfd.pid }

    /// Gives the advice (all of it, in one step) for the app's memory.
    func perform(_ advice: inout ProcessMemoryAdvice) throws {
        try advice.perform(on: pidfd)
    }

    /// SIGSTOP, and the kernel's report that it stopped.
    func stop() throws { try pidfd.stopChild() }

    /// One wake of the stopped app: the stamp `t0` written to its socket, the bench's epoll
    /// wait on its copy returning, `beforeResume` (the read-ahead, if any), `SIGCONT`; then
    /// the app's report. Returns (write → read returned, write → all memory read) in
    /// nanoseconds; throws if the memory did not read back intact.
    func wake(beforeResume: () throws -> Void) throws -> (read: UInt64, restored: UInt64) {
        var stamp = MonotonicInstant.now.nanoseconds
        guard write(peer.rawValue, &stamp, 8) == 8 else { throw Errno.current("write(stamp)") }
        var ready = false
        while !ready { epoll.wait(timeoutMilliseconds: 10_000) { _ in ready = true } }
        try beforeResume()
        try pidfd.send(SIGCONT)
        while true {
            guard let line = try reports.next(timeoutMilliseconds: 120_000) else { throw BenchError("the memory app did not report within 120 s") }
            let fields = line.split(separator: " ")
            guard fields.count == 5, fields[0] == "W", let t0 = UInt64(fields[1]), let t2 = UInt64(fields[2]),
                  let t3 = UInt64(fields[3]), let sum = UInt64(fields[4]) else {
                progress("memory app: \(line)")
                continue
            }
            guard t0 == stamp else { throw BenchError("the memory app reported stamp \(t0), not \(stamp)") }
            guard sum == checksum else { throw BenchError("the memory app's memory came back changed: checksum \(sum), not \(checksum)") }
            return (t2 &- t0, t3 &- t0)
        }
    }

    /// Continues and kills it, and reaps it.
    func kill() {
        _ = try? pidfd.send(SIGCONT)
        _ = try? pidfd.send(SIGKILL)
        _ = try? pidfd.waitForExit()
    }

    deinit { kill() }
}
