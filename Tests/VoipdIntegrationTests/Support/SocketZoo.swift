import Foundation
import Glibc
import VoipdSystem
import VoipdTestSupport

/// Tests/adoption-programs/socket_zoo.py, running: a program that opens TCP and UDP sockets
/// of every role in its main thread, another thread and a child, and reports their
/// descriptors and inodes. It connects to the test's own TCP listener and UDP socket.
final class SocketZoo {
    struct Entry: Decodable {
        let name: String
        let pid: Int32
        let fd: Int32
        let inode: UInt64
    }

    private struct Report: Decodable {
        let sockets: [Entry]
    }

    static let script = packageDirectory + "/Tests/adoption-programs/socket_zoo.py"

    let process: TestProcess
    let directory: String
    /// The test's ends: a listener the zoo connected to (its connection accepted here) and
    /// a UDP socket the zoo connected a UDP socket to.
    let peerListener: FileDescriptor
    let peerUDP: FileDescriptor
    let accepted: FileDescriptor
    let sockets: [Entry]
    /// The zoo ends when this closes (its standard input).
    private var input: DescriptorBox?

    var pid: pid_t { process.pid }

    init(extraUDPSockets: Int = 0) throws {
        directory = try makeTemporaryDirectory("voipd-zoo")
        peerListener = try Socket.listenTCP()
        peerUDP = try Socket.make(domain: AF_INET, type: Socket.datagramType)
        try Self.bindLoopback(peerUDP)
        let tcpPort = try Socket.localPort(peerListener)
        let udpPort = try Socket.localPort(peerUDP)
        let pipe = try makePipe()
        let readEnd = pipe.first
        let writeEnd = pipe.second
        let output = try openFile(directory + "/report", flags: O_WRONLY | O_CREAT | O_TRUNC)
        process = try TestProcess(["/usr/bin/python3", Self.script, "\(tcpPort)", "\(udpPort)", "\(extraUDPSockets)"],
                                  output: output.rawValue) { $0.standardInput = readEnd.rawValue }
        input = DescriptorBox(writeEnd)
        do {
            try waitForText("\"sockets\"", in: directory + "/report", timeout: .seconds(30))
            let line = (ProcFS.read(directory + "/report") ?? "").split(separator: "\n").first.map(String.init) ?? ""
            sockets = try JSONDecoder().decode(Report.self, from: Data(line.utf8)).sockets
            guard waitReadable(peerListener.rawValue, Deadline(.seconds(5))), let connection = try Socket.accept(peerListener, nonBlocking: false).processed() else {
                throw TimedOut(description: "the zoo's connection never came")
            }
            accepted = connection
        } catch {
            process.stop()
            removeTree(directory)
            throw error
        }
    }

    func entry(_ name: String) -> Entry { sockets.first { $0.name == name }! }

    /// Waits until the zoo's socket `name` is readable (seen through a copy of it): loopback
    /// may finish delivering a connection, bytes or a datagram after the sender's call has
    /// returned (its receive side runs in ksoftirqd on a busy machine).
    func waitUntilReadable(_ name: String) throws {
        let entry = entry(name)
        let copy = try PidFd(pid: entry.pid).duplicateDescriptor(entry.fd)
        guard waitReadable(copy.rawValue, Deadline(.seconds(10))) else { throw TimedOut(description: "nothing arrived on the zoo's \(name)") }
    }

    /// Closes its standard input (it exits and kills its child), then makes sure by SIGKILL.
    func stop() {
        input = nil
        _ = try? process.waitForExit(.seconds(5))
        process.stop()
        removeTree(directory)
    }

    private static func bindLoopback(_ socket: borrowing FileDescriptor) throws {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket.rawValue, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if result != 0 { throw Errno.current("bind") }
    }
}
