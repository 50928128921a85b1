import CVoipd
import Glibc

/// One message received with `recvmsg`, with the descriptors that came with it.
public struct ReceivedMessage {
    /// The bytes received (at most the buffer's size).
    public var bytes: [UInt8]
    /// The real length of the packet (`MSG_TRUNC` makes the kernel report it even when the
    /// buffer was smaller). Larger than `bytes.count` means the packet was cut.
    public var length: Int
    /// Every descriptor that arrived; the bag closes those nobody takes.
    public var descriptors: DescriptorBag
    /// `MSG_CTRUNC`: more descriptors were sent than the control buffer could hold; the
    /// kernel closed the rest.
    public var controlTruncated: Bool
    /// The peer closed the connection (a zero-length read on a stream or seqpacket socket).
    public var isEndOfStream: Bool { length == 0 && bytes.isEmpty }
}

extension Socket {
    /// `sendmsg` with the descriptors (borrowed: still the caller's) in one `SCM_RIGHTS`
    /// control message. `MSG_NOSIGNAL`, so that a vanished peer is EPIPE, not a SIGPIPE.
    /// ``IOResult/wouldBlock`` when a non-blocking socket's buffer is full; a datagram or
    /// packet the kernel cut short is `EMSGSIZE`.
    public static func send(_ socket: borrowing FileDescriptor, bytes: [UInt8], descriptors: [CInt] = []) throws(Errno) -> IOResult<Void> {
        let controlLength = descriptors.isEmpty ? 0 : voipd_cmsg_space(descriptors.count * MemoryLayout<CInt>.size)
        // sendmsg only reads the buffer: the caller's array is lent as it is, not copied.
        let outcome = bytes.withUnsafeBytes { raw in
            withMessage(UnsafeMutableRawBufferPointer(mutating: raw), controlLength: controlLength) { message in
            if !descriptors.isEmpty {
                let header = voipd_cmsg_firsthdr(&message)!
                header.pointee.cmsg_level = SOL_SOCKET
                header.pointee.cmsg_type = CInt(SCM_RIGHTS)
                header.pointee.cmsg_len = voipd_cmsg_len(descriptors.count * MemoryLayout<CInt>.size)
                let data = UnsafeMutableRawPointer(voipd_cmsg_data(header)!)
                descriptors.withUnsafeBytes { data.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            }
            return Result { () throws(Errno) in try valueOrErrno("sendmsg") { sendmsg(socket.rawValue, &message, voipd_MSG_NOSIGNAL) } }
            }
        }
        let sent: Int
        do {
            sent = try outcome.get()
        } catch .wouldBlock {
            return .wouldBlock
        }
        if sent != bytes.count { throw Errno(EMSGSIZE, call: "sendmsg: short send \(sent) of \(bytes.count)") }
        return .processed(())
    }

    /// `recvmsg` with `MSG_CMSG_CLOEXEC` (received descriptors are close-on-exec from birth)
    /// and `MSG_TRUNC` (the real length of a longer packet is reported). Room is made for
    /// `maxDescriptors`; more than that sets ``ReceivedMessage/controlTruncated``.
    /// ``IOResult/wouldBlock`` when nothing is waiting on a non-blocking socket.
    public static func receive(_ socket: borrowing FileDescriptor, maxBytes: Int, maxDescriptors: Int) throws(Errno) -> IOResult<ReceivedMessage> {
        let fd = socket.rawValue
        // Received into a scratch buffer (on the stack when there is room for it), and only
        // what came is copied out: a frame is tens of bytes, the buffer 64 KiB, and zeroing
        // a fresh one for every frame cost more than the frame.
        return try withUnsafeTemporaryAllocation(byteCount: max(maxBytes, 1), alignment: 1) { buffer in
            receive(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<maxBytes]), maxDescriptors: maxDescriptors)
        }.get()
    }

    /// As ``receive(_:maxBytes:maxDescriptors:)``, into the caller's scratch `buffer` (its
    /// size is the most bytes read): a reader that keeps one spares an allocation of the
    /// largest packet for every packet. With `withoutWaiting` (`MSG_DONTWAIT`) a blocking
    /// socket with nothing waiting says ``IOResult/wouldBlock`` too: one system call where a
    /// `poll` with no timeout and then the read took two.
    public static func receive(_ socket: borrowing FileDescriptor, into buffer: UnsafeMutableRawBufferPointer,
                               maxDescriptors: Int, withoutWaiting: Bool = false) throws(Errno) -> IOResult<ReceivedMessage> {
        try receive(socket.rawValue, into: buffer, maxDescriptors: maxDescriptors, withoutWaiting: withoutWaiting).get()
    }

    private static func receive(_ fd: CInt, into buffer: UnsafeMutableRawBufferPointer, maxDescriptors: Int,
                                withoutWaiting: Bool = false) -> Result<IOResult<ReceivedMessage>, Errno> {
        var received: [CInt] = []
        var flags: CInt = 0
        let controlLength = voipd_cmsg_space(max(maxDescriptors, 1) * MemoryLayout<CInt>.size)
        let outcome = withMessage(buffer, controlLength: controlLength) { message in
            let outcome = Result { () throws(Errno) in
                try valueOrErrno("recvmsg") { recvmsg(fd, &message, voipd_MSG_CMSG_CLOEXEC | CInt(MSG_TRUNC) | (withoutWaiting ? CInt(MSG_DONTWAIT) : 0)) }
            }
            guard case .success = outcome else { return outcome }
            flags = message.msg_flags
            // Collect every descriptor first, so none can leak whatever happens next.
            var header = voipd_cmsg_firsthdr(&message)
            while let current = header {
                if current.pointee.cmsg_level == SOL_SOCKET && current.pointee.cmsg_type == CInt(SCM_RIGHTS) {
                    let count = (Int(current.pointee.cmsg_len) - voipd_cmsg_len(0)) / MemoryLayout<CInt>.size
                    let data = UnsafeRawPointer(voipd_cmsg_data(current)!)
                    for i in 0..<count { received.append(data.loadUnaligned(fromByteOffset: i * MemoryLayout<CInt>.size, as: CInt.self)) }
                }
                header = voipd_cmsg_nxthdr(&message, current)
            }
            return outcome
        }
        let n: Int
        switch outcome {
        case .success(let count): n = count
        case .failure(.wouldBlock): return .success(.wouldBlock)
        case .failure(let error): return .failure(error)
        }
        let bytes = [UInt8](UnsafeRawBufferPointer(rebasing: buffer[..<min(n, buffer.count)]))
        return .success(.processed(ReceivedMessage(bytes: bytes, length: n, descriptors: DescriptorBag(adopting: received),
                                                   controlTruncated: flags & CInt(MSG_CTRUNC) != 0)))
    }

    /// Runs `body` with a message header for the one buffer `bytes` and a zeroed control
    /// buffer of `controlLength` bytes (none for 0, on the stack): what `sendmsg` and
    /// `recvmsg` both take. The result is a `Result` because the standard library's closures
    /// rethrow untyped errors.
    private static func withMessage(_ bytes: UnsafeMutableRawBufferPointer, controlLength: Int,
                                    _ body: (inout msghdr) -> Result<Int, Errno>) -> Result<Int, Errno> {
        withUnsafeTemporaryAllocation(byteCount: max(controlLength, 1), alignment: MemoryLayout<cmsghdr>.alignment) { control in
            control.initializeMemory(as: UInt8.self, repeating: 0)
            var vector = iovec(iov_base: bytes.baseAddress, iov_len: bytes.count)
            return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                var message = msghdr()
                message.msg_iov = vectorPointer
                message.msg_iovlen = 1
                if controlLength > 0 {
                    message.msg_control = control.baseAddress
                    message.msg_controllen = controlLength
                }
                return body(&message)
            }
        }
    }
}
