import Glibc
import Testing
import VoipdSystem
import VoipdVocabulary

/// A netlink message: header (length, type, flags, sequence, port) and body, padded to 4 bytes.
private func message(type: UInt16, sequence: UInt32 = 1, body: [UInt8], length: UInt32? = nil) -> [UInt8] {
    var bytes: [UInt8] = []
    func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
    put(length ?? UInt32(16 + body.count))
    put(type)
    put(UInt16(2))
    put(sequence)
    put(UInt32(0))
    bytes += body
    while bytes.count % 4 != 0 { bytes.append(0) }
    return bytes
}

/// An `inet_diag_msg` (72 bytes) for an IPv4 socket.
private func record(state: UInt8, local: ([UInt8], UInt16), remote: ([UInt8], UInt16), receiveQueue: UInt32, inode: UInt32) -> [UInt8] {
    var bytes: [UInt8] = [UInt8(AF_INET), state, 0, 0]
    withUnsafeBytes(of: local.1.bigEndian) { bytes += $0 }
    withUnsafeBytes(of: remote.1.bigEndian) { bytes += $0 }
    bytes += local.0 + [UInt8](repeating: 0, count: 12)
    bytes += remote.0 + [UInt8](repeating: 0, count: 12)
    bytes += [UInt8](repeating: 0, count: 4 + 8 + 4)
    for value in [receiveQueue, 0, 0, inode] { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
    return bytes
}

private func decode(_ bytes: [UInt8], transport: NetworkSocket.Transport = .tcp) throws -> InetDiagMessages.Batch {
    try bytes.withUnsafeBytes { try InetDiagMessages.decode($0, transport: transport, sequence: 1) }
}

@Suite("Kernel socket tables, decoded")
struct KernelTableDecodingTests {
    private let sockDiagByFamily: UInt16 = 20
    private let done: UInt16 = 3
    private let error: UInt16 = 2

    @Test("inet_diag records become sockets; NLMSG_DONE ends the dump; another request's replies are skipped")
    func records() throws {
        let connection = record(state: 1, local: ([127, 0, 0, 1], 40000), remote: ([127, 0, 0, 1], 5060), receiveQueue: 777, inode: 42)
        let listener = record(state: 10, local: ([0, 0, 0, 0], 5060), remote: ([0, 0, 0, 0], 0), receiveQueue: 0, inode: 43)
        let datagram = message(type: sockDiagByFamily, body: connection) + message(type: sockDiagByFamily, sequence: 9, body: listener)
            + message(type: sockDiagByFamily, body: listener)
        let expected = [socket(.tcp, "127.0.0.1:40000", "127.0.0.1:5060", inode: 42, receiveQueue: 777), socket(.tcp, "0.0.0.0:5060", inode: 43)]
        #expect(try decode(datagram) == .sockets(expected))
        #expect(try decode(datagram + message(type: done, body: [0, 0, 0, 0])) == .done(expected))
    }

    @Test("the kernel's errors are thrown with their errno; lengths that lie are EBADMSG, never a read past the datagram")
    func malformed() throws {
        let refusal = message(type: error, body: withUnsafeBytes(of: Int32(-ENOENT)) { Array($0) } + [UInt8](repeating: 0, count: 16))
        #expect(throws: Errno(ENOENT)) { try decode(refusal) }
        let record = record(state: 1, local: ([127, 0, 0, 1], 1), remote: ([127, 0, 0, 1], 2), receiveQueue: 0, inode: 1)
        #expect(throws: Errno(EBADMSG)) { try decode(message(type: sockDiagByFamily, body: record, length: 4000)) }
        #expect(throws: Errno(EBADMSG)) { try decode(message(type: sockDiagByFamily, body: record, length: 8)) }
        #expect(throws: Errno(EBADMSG)) { try decode(message(type: sockDiagByFamily, body: Array(record.prefix(40)))) }
        #expect(throws: Errno(EBADMSG)) { try decode(message(type: error, body: [1])) }
        #expect(try decode(Array(message(type: done, body: []).prefix(10))) == .sockets([]), "a trailing fragment is no message")
    }

    @Test("/proc/net lines: hexadecimal words in the host's order, ports, queues, inode; other lines are not sockets")
    func procNetLines() {
        let tcp = "   3: 0100007F:DB56 0100007F:13C4 01 00000000:00000309 00:00000000 00000000     0        0 6621860 1 0000000000000000 20 4 0 10 -1"
        #expect(ProcNetSocketTable.parse(Substring(tcp), transport: .tcp)
                == socket(.tcp, "127.0.0.1:56150", "127.0.0.1:5060", inode: 6621860, receiveQueue: 0x309))
        let udp6 = "  841: 00000000000000000000000000000000:13C6 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 6654465 2 0000000000000000 0"
        #expect(ProcNetSocketTable.parse(Substring(udp6), transport: .udp) == socket(.udp, "[::]:5062", inode: 6654465))
        let loopback6 = "   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 99 1"
        #expect(ProcNetSocketTable.parse(Substring(loopback6), transport: .tcp) == socket(.tcp, "[::1]:8080", inode: 99))
        for line in ["  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode", "",
                     "   3: 0100007F:DB56 0100007F:13C4 FF 00000000:00000000 00:00000000 00000000 0 0 1",
                     "   3: 0100007F 0100007F:13C4 01 00000000:00000000 00:00000000 00000000 0 0 1"] {
            #expect(ProcNetSocketTable.parse(Substring(line), transport: .tcp) == nil, "\(line)")
        }
    }
}
