import Foundation
import Glibc
import VoipdSystem

/// A client that speaks the wire protocol by hand, so tests can send what no well-behaved
/// client would: cut frames, wrong counts, foreign descriptors.
final class RawClient {
    let descriptor: FileDescriptor

    init(socketPath: String) throws {
        descriptor = try Socket.connectUnix(path: socketPath)
    }

    /// A frame with a correct header unless told otherwise.
    static func frame(type: UInt16, body: String, declaredLength: Int? = nil, declaredDescriptors: Int = 0, version: UInt8 = 1) -> [UInt8] {
        let bytes = Array(body.utf8)
        let length = UInt32(declaredLength ?? bytes.count)
        return [UInt8(length & 0xff), UInt8(length >> 8 & 0xff), UInt8(length >> 16 & 0xff), UInt8(length >> 24),
                UInt8(type & 0xff), UInt8(type >> 8), UInt8(declaredDescriptors), version] + bytes
    }

    /// Sends a packet; ``IOResult/wouldBlock`` only once the socket is made non-blocking.
    @discardableResult
    func send(_ packet: [UInt8], descriptors: [CInt] = []) throws -> IOResult<Void> {
        try Socket.send(descriptor, bytes: packet, descriptors: descriptors)
    }

    /// Sends a well-formed request with its descriptors.
    func request(type: UInt16, _ body: String, descriptors: [CInt] = []) throws {
        try send(Self.frame(type: type, body: body, declaredDescriptors: descriptors.count), descriptors: descriptors)
    }

    struct Answer {
        var id: Int
        var ok: Bool
        var code: String?
        var message: String?
        var json: [String: Any]
        var descriptors: DescriptorBag
    }

    /// The next reply (events and transitions are skipped).
    func reply(timeout: Duration = .seconds(10)) throws -> Answer {
        let deadline = Deadline(timeout)
        while true {
            guard waitReadable(descriptor.rawValue, deadline) else { throw TimedOut(description: "no reply") }
            guard case .processed(let message) = try Socket.receive(descriptor, maxBytes: 65537, maxDescriptors: 253), !message.isEndOfStream else {
                throw TimedOut(description: "connection closed before a reply")
            }
            let type = Int(message.bytes[4]) | Int(message.bytes[5]) << 8
            guard type == 128 else { continue }
            let json = try JSONSerialization.jsonObject(with: Data(message.bytes[8...])) as? [String: Any] ?? [:]
            let error = json["error"] as? [String: Any]
            return Answer(id: json["id"] as? Int ?? -1, ok: json["ok"] as? Bool ?? false, code: error?["code"] as? String,
                          message: error?["message"] as? String, json: json, descriptors: message.descriptors)
        }
    }

    /// Whether the daemon closed the connection (end of stream within the timeout).
    func isClosedByDaemon(timeout: Duration = .seconds(10)) -> Bool {
        let deadline = Deadline(timeout)
        while waitReadable(descriptor.rawValue, deadline) {
            guard case .processed(let message)? = try? Socket.receive(descriptor, maxBytes: 65537, maxDescriptors: 253) else { return true }
            if message.isEndOfStream { return true }
        }
        return false
    }
}

/// A socket pair whose far end tells whether the near end, given away, was closed by its
/// receiver: once every copy of `given` is closed, `witness` reads end of file.
final class ClosureWitness {
    let witness: FileDescriptor
    private var given: CInt?

    init() throws {
        let pair = try Socket.pair()
        witness = pair.first
        given = pair.second.release()
    }

    /// The descriptor to send; the test's own copy is closed by ``dropOwnCopy()``.
    var descriptor: CInt { given! }

    func dropOwnCopy() {
        if let fd = given { close(fd) }
        given = nil
    }

    /// Whether every other copy has been closed (the witness reads end of file).
    func givenEndWasClosed(timeout: Duration = .seconds(10)) -> Bool {
        guard waitReadable(witness.rawValue, Deadline(timeout)) else { return false }
        return (try? witness.read(upTo: 16))?.isEmpty == true
    }

    deinit { dropOwnCopy() }
}
