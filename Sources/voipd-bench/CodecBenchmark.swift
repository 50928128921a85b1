import Foundation
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// `voipd-bench codec`: what encoding and decoding the request path's messages costs, in one
/// process with no I/O: Foundation's JSONEncoder and JSONDecoder (configured as WireCodec
/// configures them) beside what `WireCodec` actually does for each message. The figures that
/// justify (or not) WireCodec's direct paths; docs/BENCHMARKS.md, "The request path".
enum CodecBenchmark {
    struct Options: SubcommandOptions {
        var iterations = 100_000
        var rounds = 7
        var cpu: Int?

        static let usage = """
        usage: voipd-bench codec [--iterations N] [--rounds N] [--cpu N]

        ns of the thread's CPU time per message (CLOCK_THREAD_CPUTIME_ID: what other processes
        take does not count), the median of ROUNDS rounds of N iterations each (default
        100000 × 7), on CPU N if given (default: the scheduler's choice).
        """

        mutating func read(_ flag: String, from reader: inout OptionReader) throws {
            switch flag {
            case "--iterations": iterations = try reader.integer(flag, in: 1...10_000_000)
            case "--rounds": rounds = try reader.integer(flag, in: 1...99)
            case "--cpu": cpu = try reader.integer(flag, in: 0...1023)
            default: throw OptionReader.unknown(flag)
            }
        }
    }

    static func main(_ arguments: [String]) -> Int32 {
        runSubcommand("codec", arguments: arguments, run: run)
    }

    private static func run(_ options: Options) throws {
        if let cpu = options.cpu { try pinCurrentThread(to: cpu) }
        progress("load average \(WakeBenchmark.loadAverage())")
        let codec = WireCodec()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let decoder = JSONDecoder()
        let socket = HeldSocketStatus(app: "softphone", name: "sip-tcp", kind: "tcp", bytesAvailable: 0, peerClosed: false,
                                      watching: false, registeredAt: 1_795_000_000.123456)
        let reply = Reply(id: 42, result: SocketResult(socket: socket))
        let event = EventMessage(event: 7, kind: .voipSocketReadable, socket: "sip-tcp", bytesAvailable: 8, peerClosed: false,
                                 state: .background, reason: "data on sip-tcp")
        let request = Array(try encoder.encode(SocketNameRequest(id: 42, name: "sip-tcp")))[...]
        let acknowledgement = Array(try encoder.encode(AcknowledgeMessage(event: 7)))[...]
        let replyBytes = Array(try encoder.encode(reply))[...]
        let eventBytes = Array(try encoder.encode(event))[...]

        var cases: [(String, () throws -> Int)] = [
            ("decode SocketNameRequest, JSONDecoder", { try decoder.decode(SocketNameRequest.self, from: Data(request)).name.utf8.count }),
            ("decode SocketNameRequest, WireCodec", { try codec.decode(SocketNameRequest.self, from: request).name.utf8.count }),
            ("decode RequestID, WireCodec", { Int(try codec.decode(RequestID.self, from: request).id ?? 0) }),
            ("decode AcknowledgeMessage, WireCodec", { Int(try codec.decode(AcknowledgeMessage.self, from: acknowledgement).event) }),
            ("encode Reply<SocketResult>, JSONEncoder", { try encoder.encode(reply).count }),
            ("encode Reply<SocketResult>, WireCodec", { try codec.packet(.reply, reply).count }),
            ("encode Reply<EmptyResult>, WireCodec", { try codec.packet(.reply, Reply(id: 42, result: EmptyResult())).count }),
            ("decode Reply<SocketResult>, WireCodec", { Int(try codec.decode(Reply<SocketResult>.self, from: replyBytes).id) }),
            ("encode EventMessage, JSONEncoder", { try encoder.encode(event).count }),
            ("encode EventMessage, WireCodec", { try codec.packet(.event, event).count }),
            ("decode EventMessage, WireCodec", { Int(try codec.decode(EventMessage.self, from: eventBytes).event) }),
        ]
        var sink = 0
        for index in cases.indices {
            let (name, body) = cases[index]
            var perRound: [Double] = []
            for _ in 0..<options.rounds {
                let start = threadCPUNanoseconds()
                for _ in 0..<options.iterations { sink &+= try body() }
                perRound.append(Double(threadCPUNanoseconds() - start) / Double(options.iterations))
            }
            print("\(name): \(fixed(median(perRound), 0)) ns (rounds \(fixed(perRound.min()!, 0))–\(fixed(perRound.max()!, 0)))")
            fflush(nil)
            cases[index].1 = { 0 }
        }
        if sink == 42 { print("") }
        progress("done; load average \(WakeBenchmark.loadAverage())")
    }
}

/// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), in nanoseconds.
func threadCPUNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}
