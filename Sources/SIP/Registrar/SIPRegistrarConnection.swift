import VoipdSystem

/// One accepted TCP connection: its descriptor, the framer for what it sends us, and what
/// we still have to write to it.
final class SIPRegistrarConnection {
    enum ReadOutcome {
        case data
        case wouldBlock
        case closed(String)
    }

    let id: Int
    /// Nil once closed.
    private var descriptor: FileDescriptor?
    let peer: String
    var framer: SIPStreamFramer
    private var outgoing: [UInt8] = []

    init(id: Int, descriptor: consuming FileDescriptor, maximumMessageSize: Int) {
        self.id = id
        self.peer = SIPSocket.peerName(descriptor)
        self.descriptor = consume descriptor
        self.framer = SIPStreamFramer(maximumMessageSize: maximumMessageSize)
    }

    /// The descriptor's number, to poll it; -1 (which poll skips) once closed.
    var fd: Int32 { onDescriptor { $0.rawValue } ?? -1 }

    var wantsToWrite: Bool { !outgoing.isEmpty }

    /// Reads what is available into the framer.
    func read() -> ReadOutcome {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let received: IOResult<Int>?
        do throws(Errno) {
            received = try onDescriptor { descriptor throws(Errno) in
                try chunk.withUnsafeMutableBytes { bytes in Result { () throws(Errno) in try Socket.receive(descriptor, into: bytes) } }.get()
            }
        } catch {
            return .closed("\(error)")
        }
        switch received {
        case .none: return .closed("closed")
        case .wouldBlock: return .wouldBlock
        case .processed(0): return .closed("peer closed the connection")
        case .processed(let count):
            framer.append(chunk[..<count])
            return .data
        }
    }

    /// Queues bytes and writes as much as the socket takes; nil, or why the connection failed.
    func send(_ bytes: [UInt8]) -> String? {
        outgoing += bytes
        return flush()
    }

    /// Writes queued bytes until the socket would block; nil, or why the connection failed.
    func flush() -> String? {
        while !outgoing.isEmpty {
            let sent: IOResult<Int>?
            do throws(Errno) {
                sent = try onDescriptor { descriptor throws(Errno) in
                    try outgoing.withUnsafeBytes { bytes in Result { () throws(Errno) in try Socket.send(descriptor, some: bytes) } }.get()
                }
            } catch {
                return "\(error)"
            }
            switch sent {
            case .none: return "closed"
            case .wouldBlock: return nil
            case .processed(let count): outgoing.removeFirst(count)
            }
        }
        return nil
    }

    /// What `body` does with the descriptor; nil once it is closed.
    private func onDescriptor<Value, Failure: Error>(_ body: (borrowing FileDescriptor) throws(Failure) -> Value) throws(Failure) -> Value? {
        switch descriptor {
        case .some(let descriptor): try body(descriptor)
        case .none: nil
        }
    }

    func close() {
        descriptor = nil
    }
}
