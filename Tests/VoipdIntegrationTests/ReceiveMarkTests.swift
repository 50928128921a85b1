import Glibc
import Testing
import VoipdSystem

/// ``ReceiveMark``: what arrived on a socket after a mark shows even when another holder of
/// the socket read it (voipd and the app share one socket through two descriptors).
@Suite("Receive marks")
struct ReceiveMarkTests {
    @Test("TCP: bytes that arrive after the mark show, read or not; bytes from before it do not")
    func tcp() throws {
        let listener = try Socket.listenTCP()
        let sender = try Socket.connectTCP(host: "127.0.0.1", port: Socket.localPort(listener))
        guard case .processed(let held) = try Socket.accept(listener, nonBlocking: false) else { throw TimedOut(description: "accept") }
        // The app's descriptor of the same socket.
        let app = try FileDescriptor(duplicating: held.rawValue)

        try sender.writeAll(Array("before".utf8))
        try waitForBytes(held, 6)
        let mark = ReceiveMark.take(of: held)
        #expect(mark.isEvidence)
        var arrived = mark.hasArrivedSince(on: held)
        #expect(!arrived)
        _ = try app.read(upTo: 100)
        arrived = mark.hasArrivedSince(on: held)
        #expect(!arrived, "reading what came before the mark is nothing new")

        try sender.writeAll(Array("after".utf8))
        try waitForBytes(held, 5)
        arrived = mark.hasArrivedSince(on: held)
        #expect(arrived)
        _ = try app.read(upTo: 100)
        let emptied = try Socket.bytesAvailable(held) == 0
        #expect(emptied)
        arrived = mark.hasArrivedSince(on: held)
        #expect(arrived, "read by the app, still seen")
        arrived = ReceiveMark.take(of: held).hasArrivedSince(on: held)
        #expect(!arrived)
    }

    @Test("UDP: a datagram read after the mark shows when it arrived after it; one queued before it does not")
    func udp() throws {
        let held = try Socket.bindUDP()
        let app = try FileDescriptor(duplicating: held.rawValue)
        let sender = try Socket.bindUDP()
        try Socket.connectDatagram(sender, host: "127.0.0.1", port: Socket.localPort(held))

        // Queue empty at the mark: whatever is read later arrived later.
        var mark = ReceiveMark.take(of: held)
        #expect(mark.isEvidence)
        var arrived = mark.hasArrivedSince(on: held)
        #expect(!arrived)
        try sender.writeAll(Array("one".utf8))
        try waitForBytes(held, 3)
        arrived = mark.hasArrivedSince(on: held)
        #expect(arrived, "unread")
        _ = try app.read(upTo: 100)
        arrived = mark.hasArrivedSince(on: held)
        #expect(arrived, "read by the app, still seen")

        // The first socket to ask turns the kernel's receive timestamps on in deferred work;
        // until it ran, a datagram read counts as arrived when it was read (a spurious wake
        // at worst). Wait for it, then: a datagram queued at the mark and read after it is
        // not new; one sent later is.
        let stamping = Deadline(.seconds(5))
        while true {
            try sender.writeAll(Array("warm".utf8))
            try waitForBytes(held, 4)
            let warm = ReceiveMark.take(of: held)
            _ = try app.read(upTo: 100)
            guard warm.hasArrivedSince(on: held) else { break }
            guard !stamping.hasPassed else { throw TimedOut(description: "datagrams still carry no receive time") }
        }
        try sender.writeAll(Array("two".utf8))
        try waitForBytes(held, 3)
        mark = ReceiveMark.take(of: held)
        _ = try app.read(upTo: 100)
        arrived = mark.hasArrivedSince(on: held)
        #expect(!arrived)
        try sender.writeAll(Array("three".utf8))
        try waitForBytes(held, 5)
        _ = try app.read(upTo: 100)
        arrived = mark.hasArrivedSince(on: held)
        #expect(arrived)
    }

    @Test("UDP a program stamps itself (SO_TIMESTAMP, as oRTP does its RTP sockets): the kernel keeps no stamp for voipd, so a datagram the program read leaves no evidence; one unread still shows")
    func udpStampedByTheProgram() throws {
        let held = try Socket.bindUDP()
        let app = try FileDescriptor(duplicating: held.rawValue)
        // SO_TIMESTAMP (SO_TIMESTAMP_OLD on Linux; glibc's macro does not import): the
        // program's reads take the stamp in a control message, and the socket's stays unset.
        var on: CInt = 1
        guard setsockopt(app.rawValue, SOL_SOCKET, 29, &on, socklen_t(MemoryLayout<CInt>.size)) == 0 else {
            throw Errno.current("setsockopt(SO_TIMESTAMP)")
        }
        let sender = try Socket.bindUDP()
        try Socket.connectDatagram(sender, host: "127.0.0.1", port: Socket.localPort(held))

        let mark = ReceiveMark.take(of: held)
        try sender.writeAll(Array("one".utf8))
        try waitForBytes(held, 3)
        var arrived = mark.hasArrivedSince(on: held)
        #expect(arrived, "unread")
        _ = try app.read(upTo: 100)
        arrived = mark.hasArrivedSince(on: held)
        #expect(!arrived, "read by the program: no stamp to compare (if this shows, the kernel now keeps one: say so in ReceiveMark)")
    }

    @Test("TCP listener: a connection that arrives after the mark shows, accepted by the app or not; one from before it does not")
    func listener() throws {
        let held = try Socket.listenTCP()
        let app = try FileDescriptor(duplicating: held.rawValue)
        let port = try Socket.localPort(held)
        // An unrelated listener and connection on another port: the kernel's filter leaves them out.
        let other = try Socket.listenTCP()
        let otherClient = try Socket.connectTCP(host: "127.0.0.1", port: Socket.localPort(other))

        let early = try Socket.connectTCP(host: "127.0.0.1", port: port)
        try waitForConnections(held, 1)
        let mark = ReceiveMark.take(of: held)
        #expect(mark.isEvidence)
        var arrived = mark.hasArrivedSince(on: held)
        #expect(!arrived)
        guard case .processed(let first) = try Socket.accept(app, nonBlocking: false) else { throw TimedOut(description: "accept") }
        arrived = mark.hasArrivedSince(on: held)
        #expect(!arrived, "accepting what came before the mark is nothing new")
        #expect(try Socket.connectionsWaiting(held) == 0)

        let late = try Socket.connectTCP(host: "127.0.0.1", port: port)
        try waitForConnections(held, 1)
        arrived = mark.hasArrivedSince(on: held)
        #expect(arrived, "waiting")
        guard case .processed(let second) = try Socket.accept(app, nonBlocking: false) else { throw TimedOut(description: "accept") }
        #expect(try Socket.connectionsWaiting(held) == 0)
        arrived = mark.hasArrivedSince(on: held)
        #expect(arrived, "accepted by the app, still seen")
        arrived = ReceiveMark.take(of: held).hasArrivedSince(on: held)
        #expect(!arrived)
        // Every connection stays open until here: a closed one would leave the table.
        _ = [early.rawValue, late.rawValue, first.rawValue, second.rawValue, otherClient.rawValue]
    }

    @Test("Unix-domain sockets leave no evidence: only unread data shows")
    func unix() throws {
        let pair = try Socket.pair()
        let mark = ReceiveMark.take(of: pair.first)
        #expect(!mark.isEvidence)
        try pair.second.writeAll(Array("x".utf8))
        let arrived = mark.hasArrivedSince(on: pair.first)
        #expect(!arrived)
    }

    /// Waits until `count` connections wait in `listener`'s accept queue.
    private func waitForConnections(_ listener: borrowing FileDescriptor, _ count: Int) throws {
        let deadline = Deadline(.seconds(5))
        while try Socket.connectionsWaiting(listener) < count {
            guard waitReadable(listener.rawValue, deadline) else { throw TimedOut(description: "no connection") }
        }
    }

    /// Waits until `count` bytes are readable on `socket` (loopback delivers at once, but not
    /// within the same instruction).
    private func waitForBytes(_ socket: borrowing FileDescriptor, _ count: Int) throws {
        let deadline = Deadline(.seconds(5))
        while try Socket.bytesAvailable(socket) < count {
            guard waitReadable(socket.rawValue, deadline) else { throw TimedOut(description: "no data") }
        }
    }
}
