import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// Whole frames over a control connection (`AF_UNIX`, `SOCK_SEQPACKET`): the socket side of
/// ``WireCodec``, whose framing is pure.
extension WireCodec {
    /// Sends one frame with its descriptors (borrowed, still the caller's);
    /// ``IOResult/wouldBlock`` when a non-blocking connection's buffer is full.
    public func send(_ type: MessageType, _ body: some Encodable, on socket: borrowing FileDescriptor, descriptors: [CInt] = []) throws -> IOResult<Void> {
        try Socket.send(socket, bytes: packet(type, body, descriptorCount: descriptors.count), descriptors: descriptors)
    }

    /// Reads one frame from a non-blocking connection. A bad frame throws a
    /// `ProtocolError`, and every descriptor it carried is closed by then.
    /// `maxDescriptors` is the room made for descriptors: more than that arrive with
    /// MSG_CTRUNC (the kernel closes the ones that did not fit) and are refused.
    /// ``IOResult/wouldBlock`` when nothing is waiting.
    /// `withoutWaiting` reads a blocking connection as a non-blocking one (`MSG_DONTWAIT`).
    public func receive(from socket: borrowing FileDescriptor, maxDescriptors: Int = Frame.maximumDescriptors,
                        withoutWaiting: Bool = false) throws -> IOResult<Received> {
        guard case .processed(let message) = try Socket.receive(socket, into: receiveBuffer, maxDescriptors: maxDescriptors,
                                                                withoutWaiting: withoutWaiting) else {
            return .wouldBlock
        }
        if message.isEndOfStream && message.descriptors.count == 0 { return .processed(.endOfStream) }
        // Truncated with room to spare: the receiver could not install them (out of
        // descriptors itself), which is not the sender's fault. The frame stays valid.
        let lost = message.controlTruncated && message.descriptors.count < maxDescriptors
        do {
            let declared = FrameHeader(parsing: message.bytes).map { Int($0.descriptors) } ?? 0
            let decoded = try Frame.decode(bytes: message.bytes, length: message.length,
                                           descriptors: lost ? declared : message.descriptors.count,
                                           controlTruncated: message.controlTruncated && !lost)
            if lost { message.descriptors.closeAll() }
            return .processed(.frame(IncomingFrame(type: decoded.type, body: decoded.body, descriptors: lost ? DescriptorBag() : message.descriptors,
                                                   descriptorsLost: lost)))
        } catch {
            message.descriptors.closeAll()
            throw error
        }
    }
}

/// What a read from a connection found.
public enum Received {
    case frame(IncomingFrame)
    /// The peer closed the connection.
    case endOfStream
}

/// A validated frame and the descriptors that came with it.
public struct IncomingFrame {
    public var type: MessageType
    public var body: ArraySlice<UInt8>
    public var descriptors: DescriptorBag
    /// Descriptors were sent with it but could not be received (the receiver was out of
    /// descriptors); `descriptors` is empty.
    public var descriptorsLost = false
}
