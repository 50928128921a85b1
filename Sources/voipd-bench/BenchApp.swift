import Glibc
import VoipClient
import VoipdSystem
import VoipdVocabulary

/// `voipd-bench app --connect PATH --index N [--cpu C]`: the app side of the wake
/// benchmark, launched by voipd. A plain voipd client: it connects its VoIP socket to the
/// bench's listener, registers it, and then serves one poll loop over that socket and its
/// control connection. When a stamp arrives it reads it (as soon as poll says the socket is
/// readable, or from its delegate if voipd's voipSocketReadable comes first), notes the
/// time, and reports `W INDEX T0 T2` on standard output (the bench's pipe; one write of less
/// than PIPE_BUF bytes, so reports never interleave); then it acknowledges its events and
/// is suspended.
enum BenchApp {
    static func main(_ arguments: [String]) -> Int32 {
        var path: String?
        var index: Int?
        var cpu: Int?
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--connect": path = iterator.next()
            case "--index": index = iterator.next().flatMap { Int($0) }
            case "--cpu": cpu = iterator.next().flatMap { Int($0) }
            default: return fail("unknown argument \(argument)")
            }
        }
        guard let path, let index else { return fail("usage: voipd-bench app --connect PATH --index N [--cpu C]") }
        do {
            if let cpu { try pinCurrentThread(to: cpu) }
            let application = try VoIPApplication()
            // It ends with voipd (the bench stops voipd to end the run), instead of waiting for another.
            application.reconnection.isEnabled = false
            let voip = try Socket.connectUnix(path: path, type: Socket.streamType)
            try application.registerVoIPSocket(voip.rawValue, name: "bench")
            // Registered: the bench may now send it to the background.
            var announced = UInt32(index).littleEndian
            guard write(voip.rawValue, &announced, 4) == 4 else { throw Errno.current("write(index)") }
            return try serve(application, voip: voip.rawValue, index: index)
        } catch VoipdError.disconnected {
            return 0
        } catch {
            return fail("\(error)")
        }
    }

    /// The app's loop: the VoIP socket first (that read is what is timed), then events.
    private static func serve(_ application: VoIPApplication, voip: CInt, index: Int) throws -> Int32 {
        let reader = StampReader(socket: voip, index: index)
        // Told that the socket is readable, the app reads it before acknowledging, as an app
        // must: voipd does not wake it again for data it was told about.
        application.delegate = reader
        // Allocated once: after a wake the app runs this loop with cold caches, so it does
        // as little as it can between being resumed and reading its socket.
        let watched = UnsafeMutablePointer<pollfd>.allocate(capacity: 2)
        defer { watched.deallocate() }
        while true {
            watched[0] = pollfd(fd: voip, events: Int16(POLLIN), revents: 0)
            watched[1] = pollfd(fd: application.fileDescriptor, events: Int16(POLLIN), revents: 0)
            let timeout: Int32 = application.hasBufferedMessages ? 0 : -1
            if poll(watched, 2, timeout) < 0 {
                guard errno == EINTR else { throw Errno.current("poll") }
                continue
            }
            if watched[0].revents != 0 { reader.read() }
            if watched[1].revents != 0 || application.hasBufferedMessages {
                // One message per readiness, then only what already came with it: no second
                // look at the connection after acknowledging, so the app is back in its
                // poll (where the stop finds it, and where a wake resumes it) at once.
                var event = try application.nextEvent(timeoutMilliseconds: 0)
                while let current = event {
                    application.dispatch(current)
                    try application.acknowledge(current)
                    event = application.hasBufferedMessages ? try application.nextEvent(timeoutMilliseconds: 0) : nil
                }
            }
            if reader.peerClosed || application.terminationRequested { return 0 }
        }
    }

    private static func fail(_ message: String) -> Int32 {
        writeError("voipd-bench app: \(message)\n")
        return 1
    }
}

/// Reads the stamps the bench sends and reports each whole one with the time its read
/// returned; from the poll loop, or from the delegate when voipd says the socket is readable.
final class StampReader: VoIPApplicationDelegate {
    let socket: CInt
    let index: Int
    /// The bench closed its end: the benchmark is over.
    private(set) var peerClosed = false
    private var pending: [UInt8] = []

    init(socket: CInt, index: Int) {
        self.socket = socket
        self.index = index
    }

    func application(_ application: VoIPApplication, voipSocketReadable readiness: SocketReadiness) {
        read()
    }

    /// Reads what is waiting, without blocking.
    func read() {
        var buffer = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        let n = withUnsafeMutableBytes(of: &buffer) { recv(socket, $0.baseAddress, $0.count, CInt(MSG_DONTWAIT)) }
        let readReturned = MonotonicInstant.now.nanoseconds
        guard n > 0 else {
            if n == 0 { peerClosed = true }
            return
        }
        withUnsafeBytes(of: &buffer) { pending.append(contentsOf: $0.prefix(n)) }
        while pending.count >= 8 {
            let sent = pending.prefix(8).enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
            pending.removeFirst(8)
            var line = Array("W \(index) \(sent) \(readReturned)\n".utf8)
            _ = write(1, &line, line.count)
        }
    }
}
