import VoipdProtocol

/// A packet as a client's `recvmsg` delivers it to the daemon: the header checked, then the
/// body decoded as its type says.
///
/// Input: one byte describing what the kernel reported (bits 0–2: descriptors that arrived;
/// bit 3: MSG_CTRUNC; bit 4: the packet was longer than what was read, by bits 5–7 × 16 KiB),
/// then the packet.
enum FuzzTarget {
    static func run(_ input: [UInt8]) {
        guard let report = input.first else { return }
        let packet = Array(input.dropFirst())
        let descriptors = Int(report & 0x07)
        let controlTruncated = report & 0x08 != 0
        let length = report & 0x10 != 0 ? packet.count + 1 + Int(report >> 5) * 16384 : packet.count
        let frame: Frame.Decoded
        do {
            frame = try Frame.decode(bytes: packet, length: length, descriptors: descriptors, controlTruncated: controlTruncated)
        } catch {
            require(error.closesConnection, "a bad packet must close the connection: \(error)")
            RequestChecks.requireOneLogLine("bad packet: \(error)")
            return
        }
        require(!controlTruncated && length == packet.count && length <= Frame.maximumSize, "a cut packet was accepted")
        require(frame.declaredDescriptors == descriptors, "declared \(frame.declaredDescriptors), arrived \(descriptors)")
        let encoded = Frame.encode(type: frame.type, body: Array(frame.body), descriptorCount: frame.declaredDescriptors)
        require(encoded == packet, "the header does not read back as it was written")
        RequestChecks.check(type: frame.type, body: frame.body, descriptors: descriptors)
    }

    static var seeds: [(String, [UInt8])] {
        Samples.messages.map { sample in
            (sample.name, [UInt8(sample.descriptors)] + Frame.encode(type: sample.type, body: sample.body, descriptorCount: sample.descriptors))
        }
    }
}
