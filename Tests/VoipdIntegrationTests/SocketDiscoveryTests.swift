import Glibc
import Testing
import VoipdAdoption
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// Finding the sockets of a program that does not talk to voipd, and taking copies of them:
/// Tests/adoption-programs/socket_zoo.py opens sockets in threads and a child; discovery
/// must find each with its addresses, role and inode, the rules must pick exactly the
/// intended ones, and a copy must share the socket with the program.
@Suite("Socket discovery in unmodified programs", .serialized, .enabled(if: toolAvailableOrCI("/usr/bin/python3")))
struct SocketDiscoveryTests {
    @Test("the process tree's TCP and UDP sockets, from threads and a forked child, with addresses, roles and inodes")
    func findsEverySocket() throws {
        let zoo = try SocketZoo()
        defer { zoo.stop() }
        let discovery = try SocketDiscovery.discover(root: zoo.pid)
        let child = zoo.entry("child-udp").pid
        #expect(discovery.tree.processes == [zoo.pid, child])
        #expect(discovery.limitsReached.isEmpty && discovery.unreadable.isEmpty)
        #expect(discovery.tableSources == [.netlink])
        for entry in zoo.sockets {
            let found = discovery.sockets.first { $0.socket.inode == entry.inode }
            #expect(found?.holders.first == DescriptorLocation(pid: entry.pid, descriptor: entry.fd), "\(entry.name): \(String(describing: found))")
        }
        #expect(discovery.sockets.count == zoo.sockets.count, "\(discovery.sockets.map(\.description))")
        #expect(discovery.otherProtocols["UNIX-STREAM"] == 2, "the Unix socket pair, told apart without a table: \(discovery.otherProtocols)")

        func socket(_ name: String) -> NetworkSocket? { discovery.sockets.first { $0.socket.inode == zoo.entry(name).inode }?.socket }
        let peerPort = try Socket.localPort(zoo.peerListener)
        let loopback = IPAddress("127.0.0.1")!
        #expect(socket("tcp-listener")?.role == .listening && socket("tcp-listener")?.local.address == loopback)
        #expect(socket("tcp6-listener")?.role == .listening && socket("tcp6-listener")?.local.address == IPAddress("::1"))
        #expect(socket("tcp-to-peer")?.remote == InetEndpoint(address: loopback, port: peerPort))
        #expect(socket("tcp-to-peer")?.state == .established)
        #expect(socket("udp-bound")?.role == .unconnected && socket("udp-bound")?.remote == nil)
        #expect(socket("udp-connected")?.role == .connected)
        #expect(socket("udp-connected")?.remote == InetEndpoint(address: loopback, port: try Socket.localPort(zoo.peerUDP)))
        #expect(socket("udp6-dual-stack")?.local.address == IPAddress("::"))
        #expect(socket("tcp-from-thread")?.remote?.port == socket("tcp-listener")?.local.port)
        #expect(socket("tcp-accepted")?.local.port == socket("tcp-listener")?.local.port)
        // The child inherited the listener: it holds it too.
        let listener = discovery.sockets.first { $0.socket.inode == zoo.entry("tcp-listener").inode }
        #expect(listener?.holders.contains { $0.pid == child } == true)
    }

    @Test("rules pick exactly the intended sockets")
    func rulesPickTheIntendedSockets() throws {
        let zoo = try SocketZoo()
        defer { zoo.stop() }
        let sockets = try SocketDiscovery.discover(root: zoo.pid).sockets.map(\.socket)
        func adopted(_ rules: [String]) throws -> Set<String> {
            let inodes = try AdoptionPolicy(parsing: rules).apply(to: sockets).adoptedInodes
            return Set(zoo.sockets.filter { inodes.contains($0.inode) }.map(\.name))
        }
        let peer = try Socket.localPort(zoo.peerListener)
        let udpPeer = try Socket.localPort(zoo.peerUDP)
        #expect(try adopted(["tcp:role=listening"]) == ["tcp-listener", "tcp6-listener", "child-tcp-listener"])
        #expect(try adopted(["tcp:remote=127.0.0.1:\(peer)"]) == ["tcp-to-peer"])
        #expect(try adopted(["udp:remote=*:\(udpPeer)"]) == ["udp-connected"])
        #expect(try adopted(["udp:role=unconnected,local=127.0.0.0/8:*"]) == ["udp-bound", "child-udp", "udp6-dual-stack"],
                "the dual-stack socket on :: receives on 127.0.0.1 too")
        #expect(try adopted(["tcp:local=[::1]:*"]) == ["tcp6-listener"])
        #expect(try adopted(["sip"]).isEmpty, "nothing on SIP ports, no port bound for both UDP and TCP")
    }

    @Test("a copy taken with pidfd_getfd shares the socket: what the peer sends is readable from the copy, and queued data shows in the table")
    func copiesShareTheSocket() throws {
        let zoo = try SocketZoo()
        defer { zoo.stop() }
        try zoo.accepted.writeAll(Array("INVITE".utf8))
        try zoo.waitUntilReadable("tcp-to-peer")
        let discovery = try SocketDiscovery.discover(root: zoo.pid)
        let connection = try #require(discovery.sockets.first { $0.socket.inode == zoo.entry("tcp-to-peer").inode })
        // The zoo reads nothing: the bytes wait in its socket, and the table says so.
        #expect(connection.socket.receiveQueue == 6)
        let root = try PidFd(pid: zoo.pid)
        let copy = try connection.takeCopy(root: root)
        #expect(try Socket.inode(of: copy) == connection.socket.inode)
        #expect(try copy.read(upTo: 64) == Array("INVITE".utf8))

        // A datagram to the child's UDP socket, read through a copy taken from the child.
        let childUDP = try #require(discovery.sockets.first { $0.socket.inode == zoo.entry("child-udp").inode })
        let udpCopy = try childUDP.takeCopy(root: root)
        let sender = try Socket.make(domain: AF_INET, type: Socket.datagramType)
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = childUDP.socket.local.port.bigEndian
        target.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let sent = withUnsafePointer(to: &target) { address in
            address.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(sender.rawValue, "REGISTER", 8, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(sent == 8)
        #expect(waitReadable(udpCopy.rawValue, Deadline(.seconds(5))))
        #expect(try udpCopy.read(upTo: 64) == Array("REGISTER".utf8))
    }

    @Test("a descriptor reused for another file since the discovery is refused (ESTALE), and a closed one (EBADF)")
    func staleCopiesAreRefused() throws {
        let zoo = try SocketZoo()
        defer { zoo.stop() }
        let discovery = try SocketDiscovery.discover(root: zoo.pid)
        var stale = try #require(discovery.sockets.first { $0.socket.inode == zoo.entry("udp-bound").inode })
        let root = try PidFd(pid: zoo.pid)
        // The same descriptor number now names another socket of the program.
        stale.holders = [DescriptorLocation(pid: zoo.pid, descriptor: zoo.entry("udp-connected").fd)]
        #expect(throws: Errno(ESTALE)) { _ = try stale.takeCopy(root: root) }
        stale.holders = [DescriptorLocation(pid: zoo.pid, descriptor: 9999)]
        #expect(throws: Errno(EBADF)) { _ = try stale.takeCopy(root: root) }
    }

    @Test("sockets found again by inode (what a restarted voipd does with the state file's list): copied from the process or its child, each copy that very socket; an inode the program does not hold is said missing")
    func copiesByInode() throws {
        let zoo = try SocketZoo()
        defer { zoo.stop() }
        let wanted = ["tcp-to-peer", "child-udp"].map { zoo.entry($0).inode }
        let absent: UInt64 = 1
        let root = try PidFd(pid: zoo.pid)
        let tree = try ProcessTree.below(zoo.pid, limit: 16)
        var copied: [UInt64: UInt64] = [:]
        let outcome = SocketInodeSearch.copies(of: Set(wanted + [absent]), in: tree.processes, root: root, descriptorLimit: 1024) { inode, copy in
            copied[inode] = try? Socket.inode(of: copy)
        }
        #expect(outcome.missing == [absent])
        #expect(outcome.errors.isEmpty, "\(outcome.errors)")
        #expect(copied == Dictionary(uniqueKeysWithValues: wanted.map { ($0, $0) }))
        // Bounded: with no descriptor to look at, nothing is found.
        let bounded = SocketInodeSearch.copies(of: Set(wanted), in: tree.processes, root: root, descriptorLimit: 0) { _, _ in
            Issue.record("a copy beyond the limit")
        }
        #expect(bounded.missing == Set(wanted))
    }

    @Test("a waiting connection shows on the listener's queue; /proc/PID/net says what netlink says")
    func queuesAndFallbackAgree() throws {
        let zoo = try SocketZoo()
        defer { zoo.stop() }
        let listenerPort = try #require(try SocketDiscovery.discover(root: zoo.pid).sockets.first { $0.socket.inode == zoo.entry("tcp-listener").inode })
            .socket.local.port
        let waiting = try Socket.connectTCP(host: "127.0.0.1", port: listenerPort)
        // connect returns once the SYN-ACK came; the listener queues the connection at the ACK.
        try zoo.waitUntilReadable("tcp-listener")
        let discovery = try SocketDiscovery.discover(root: zoo.pid)
        let listener = try #require(discovery.sockets.first { $0.socket.inode == zoo.entry("tcp-listener").inode })
        #expect(listener.socket.receiveQueue == 1, "one connection not yet accepted")
        // The zoo's sockets, each looked for in its own table: a table printed a page per read
        // can skip a line when other sockets of the machine come and go between two reads,
        // and a socket missing from one pass is looked for in another.
        var fromProc: [UInt64: NetworkSocket] = [:]
        for transport in NetworkSocket.Transport.allCases {
            for family in [IPAddress.Family.ipv4, .ipv6] {
                let inodes = discovery.sockets.map(\.socket).filter { $0.transport == transport && $0.local.address.family == family }.map(\.inode)
                try ProcNetSocketTable.find(Set(inodes), pid: zoo.pid, transport: transport, family: family, limit: 1 << 20, into: &fromProc)
            }
        }
        for found in discovery.sockets {
            #expect(fromProc[found.socket.inode] == found.socket, "\(found)")
        }
        // The same through discovery itself, told to leave netlink aside.
        let fallback = try SocketDiscovery.discover(root: zoo.pid, method: .procNet)
        #expect(fallback.sockets == discovery.sockets)
        #expect(fallback.tableSources.count == 1 && fallback.tableSources != [.netlink])
        _ = waiting
    }

    @Test("described from copies of its descriptors, a discovery reads no table and finds what the tables say: ends, states, a waiting connection, unread bytes, a queued datagram, a child's sockets")
    func copiesSayWhatTheTablesSay() throws {
        let zoo = try SocketZoo()
        defer { zoo.stop() }
        let tables = try SocketDiscovery.discover(root: zoo.pid)
        func port(_ name: String) throws -> UInt16 {
            try #require(tables.sockets.first { $0.socket.inode == zoo.entry(name).inode }).socket.local.port
        }
        let waiting = try Socket.connectTCP(host: "127.0.0.1", port: try port("tcp-listener"))
        try zoo.accepted.writeAll(Array("INVITE".utf8))
        let sender = try Socket.make(domain: AF_INET, type: Socket.datagramType)
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = try port("udp-bound").bigEndian
        target.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let sent = withUnsafePointer(to: &target) { address in
            address.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(sender.rawValue, "REGISTER", 8, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(sent == 8)
        // Not necessarily within the send (on a busy machine, later, in ksoftirqd): the two
        // discoveries below must see the same queues.
        for name in ["tcp-listener", "tcp-to-peer", "udp-bound"] { try zoo.waitUntilReadable(name) }
        let byTables = try SocketDiscovery.discover(root: zoo.pid)
        let byCopies = try SocketDiscovery.discover(root: zoo.pid, method: .descriptors)
        #expect(byCopies.tableSources == [.descriptors], "no table read: \(byCopies.tableSources)")
        #expect(byCopies.sockets == byTables.sockets)
        #expect(byCopies.otherProtocols == byTables.otherProtocols)
        func socket(_ name: String) -> NetworkSocket? { byCopies.sockets.first { $0.socket.inode == zoo.entry(name).inode }?.socket }
        #expect(socket("tcp-listener")?.receiveQueue == 1, "one connection waits to be accepted")
        #expect(socket("tcp-to-peer")?.receiveQueue == 6)
        #expect(socket("udp-bound")?.hasUnreadData == true)
        #expect(socket("child-udp") != nil, "the child's socket, copied from the child")
        _ = waiting
    }

    @Test("bounded: with 6,000 sockets a discovery stops at the limits, says so, and keeps the lowest descriptors")
    func bounded() throws {
        let zoo = try SocketZoo(extraUDPSockets: 6_000)
        defer { zoo.stop() }
        let discovery = try SocketDiscovery.discover(root: zoo.pid)
        #expect(discovery.limitsReached == [.sockets(4096)])
        #expect(discovery.sockets.count + discovery.otherSockets == 4096)
        for entry in zoo.sockets where entry.pid == zoo.pid {
            #expect(discovery.sockets.contains { $0.socket.inode == entry.inode }, "\(entry.name), opened first, is kept")
        }
        let few = try SocketDiscovery.discover(root: zoo.pid, limits: SocketDiscoveryLimits(processes: 1, descriptors: 10))
        #expect(few.tree.processes == [zoo.pid] && few.tree.truncated)
        #expect(few.descriptorsExamined == 10)
        #expect(few.limitsReached == [.processes(1), .descriptors(10)])
    }

    @Test("tables are read only for the protocols found: a TCP-only look leaves UDP sockets aside, Unix sockets cost no table")
    func onlyTheTablesNeeded() throws {
        let zoo = try SocketZoo()
        defer { zoo.stop() }
        let tcp = try SocketDiscovery.discover(root: zoo.pid, transports: [.tcp])
        #expect(tcp.sockets.allSatisfy { $0.socket.transport == .tcp })
        #expect(tcp.sockets.count == zoo.sockets.filter { $0.name.contains("tcp") }.count)
        #expect(tcp.otherProtocols["UDP"] == 3 && tcp.otherProtocols["UDPv6"] == 1, "\(tcp.otherProtocols)")

        let directory = try makeTemporaryDirectory("voipd-unix-only")
        defer { removeTree(directory) }
        let output = try openFile(directory + "/out", flags: O_WRONLY | O_CREAT)
        let unixOnly = try TestProcess(["/usr/bin/python3", "-c", "import socket, time; pair = socket.socketpair(); print('ready', flush=True); time.sleep(60)"],
                                       output: output.rawValue)
        defer { unixOnly.stop() }
        try waitForText("ready", in: directory + "/out")
        let local = try SocketDiscovery.discover(root: unixOnly.pid)
        #expect(local.sockets.isEmpty && local.otherProtocols == ["UNIX-STREAM": 2])
        #expect(local.tableSources.isEmpty, "no table read")
    }

    @Test("the tree of a process that is gone is ESRCH; a cgroup's processes are read from cgroup.procs")
    func treeSources() throws {
        let exited = try TestProcess(["/bin/true"])
        let pid = exited.pid
        _ = try exited.waitForExit(.seconds(10))
        #expect(throws: Errno(ESRCH)) { _ = try SocketDiscovery.discover(root: pid) }
        let directory = try makeTemporaryDirectory("voipd-cgroup")
        defer { removeTree(directory) }
        let file = try openFile(directory + "/cgroup.procs", flags: O_WRONLY | O_CREAT)
        try file.writeAll(Array("\(getpid())\n1\n".utf8))
        #expect(try ProcessTree.inCgroup(directory, limit: 10) == ProcessTree(processes: [getpid(), 1], truncated: false))
        #expect(try ProcessTree.inCgroup(directory, limit: 1) == ProcessTree(processes: [getpid()], truncated: true))
    }
}
