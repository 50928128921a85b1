import Glibc
import Testing
import VoipdSystem

/// ``Socket/kind(of:)``, which a registration asks of every descriptor an app hands over:
/// each kind of socket voipd may hold, read with as few calls as tell it, and anything
/// that is not a socket.
@Suite("Socket kinds")
struct SocketKindTests {
    private static let stream = Socket.streamType
    private static let datagram = Socket.datagramType

    @Test("A connected Unix stream socket, both ends")
    func unixStreamPair() throws {
        let pair = try Socket.pair()
        try expectKind(of: pair.first, domain: AF_UNIX, type: Self.stream, listening: false, connected: true, port: nil)
        try expectKind(of: pair.second, domain: AF_UNIX, type: Self.stream, listening: false, connected: true, port: nil)
    }

    @Test("Unix seqpacket and datagram pairs are connected sockets of their type")
    func unixOtherTypes() throws {
        let seqpacket = try Socket.pair(type: Socket.seqpacketType)
        #expect(try Socket.kind(of: seqpacket.first)?.name == "unix-seqpacket")
        #expect(try Socket.kind(of: seqpacket.first)?.isConnected == true)
        let datagram = try Socket.pair(type: Self.datagram)
        try expectKind(of: datagram.first, domain: AF_UNIX, type: Self.datagram, listening: false, connected: true, port: nil)
    }

    @Test("An unconnected Unix datagram socket has its domain all the same")
    func unixUnconnected() throws {
        let socket = try Socket.make(domain: AF_UNIX, type: Self.datagram)
        try expectKind(of: socket, domain: AF_UNIX, type: Self.datagram, listening: false, connected: false, port: nil)
    }

    @Test("TCP: the listener, and both ends of a connection (no port read: not needed)")
    func tcp() throws {
        let listener = try Socket.listenTCP()
        let port = try Socket.localPort(listener)
        // A connected or listening socket's port is not read: its admission does not depend on it.
        try expectKind(of: listener, domain: AF_INET, type: Self.stream, listening: true, connected: false, port: nil)
        let client = try Socket.connectTCP(host: "127.0.0.1", port: port)
        guard case .processed(let accepted) = try Socket.accept(listener, nonBlocking: false) else {
            Issue.record("no connection to accept")
            return
        }
        try expectKind(of: client, domain: AF_INET, type: Self.stream, listening: false, connected: true, port: nil)
        try expectKind(of: accepted, domain: AF_INET, type: Self.stream, listening: false, connected: true, port: nil)
    }

    @Test("TCP over IPv6 is tcp6, connected or not")
    func tcp6() throws {
        let listener: FileDescriptor
        do {
            listener = try Socket.listenTCP(host: "::1")
        } catch {
            // A machine without IPv6 on loopback has no such socket to hold.
            return
        }
        let port = try Socket.localPort(listener)
        #expect(try Socket.kind(of: listener)?.name == "tcp6")
        let client = try Socket.connectTCP(host: "::1", port: port)
        try expectKind(of: client, domain: AF_INET6, type: Self.stream, listening: false, connected: true, port: nil)
    }

    @Test("UDP: bound and unconnected, then connected")
    func udp() throws {
        let socket = try Socket.bindUDP()
        let port = try Socket.localPort(socket)
        try expectKind(of: socket, domain: AF_INET, type: Self.datagram, listening: false, connected: false, port: port)
        let peer = try Socket.bindUDP()
        try Socket.connectDatagram(socket, host: "127.0.0.1", port: Socket.localPort(peer))
        try expectKind(of: socket, domain: AF_INET, type: Self.datagram, listening: false, connected: true, port: nil)
    }

    @Test("A TCP socket whose connection was reset is no longer connected")
    func tcpReset() throws {
        let listener = try Socket.listenTCP()
        let client = try Socket.connectTCP(host: "127.0.0.1", port: Socket.localPort(listener))
        guard case .processed(let accepted) = try Socket.accept(listener, nonBlocking: false) else {
            Issue.record("no connection to accept")
            return
        }
        try Socket.disconnect(accepted)
        let kind = try Socket.kind(of: accepted)
        #expect(kind?.domain == AF_INET)
        #expect(kind?.isConnected == false)
        _ = client
    }

    @Test("A pipe and a file are not sockets")
    func notSockets() throws {
        let pipe = try makePipe()
        #expect(try Socket.kind(of: pipe.first) == nil)
        let file = try openFile("/dev/null", flags: O_RDONLY)
        #expect(try Socket.kind(of: file) == nil)
    }

    private func expectKind(of socket: borrowing FileDescriptor, domain: CInt, type: CInt, listening: Bool, connected: Bool, port: UInt16?,
                            sourceLocation: SourceLocation = #_sourceLocation) throws {
        let kind = try #require(try Socket.kind(of: socket), sourceLocation: sourceLocation)
        #expect(kind.domain == domain, sourceLocation: sourceLocation)
        #expect(kind.type == type, sourceLocation: sourceLocation)
        #expect(kind.isListening == listening, sourceLocation: sourceLocation)
        #expect(kind.isConnected == connected, sourceLocation: sourceLocation)
        #expect(kind.localPort == port, sourceLocation: sourceLocation)
    }
}
