import VoipdVocabulary

// A receive mark and a socket's kind in a binary record (an in-place upgrade's held
// sockets): a tag byte per evidence, its values at their full width. Any change here is a
// change of the record layout that carries them (its version goes up with it).

extension ReceiveMark {
    private enum Tag: UInt8 {
        case none = 0, streamBytes = 1, connections = 2, datagram = 3
    }

    public func write(to writer: inout BinaryRecordWriter) {
        switch evidence {
        case .none:
            writer.append(Tag.none.rawValue)
        case .streamBytes(let bytes):
            writer.append(Tag.streamBytes.rawValue)
            writer.append(bytes)
        case .connections(let peers):
            writer.append(Tag.connections.rawValue)
            writer.append(UInt32(peers.count))
            // Sorted: the same mark is always the same bytes.
            for peer in peers.sorted(by: { ($0.address, $0.port) < ($1.address, $1.port) }) {
                let address = peer.address.bytes
                writer.append(UInt8(address.count))
                for byte in address { writer.append(byte) }
                writer.append(peer.port)
            }
        case .datagram(let lastRead, let takenAt, let queueWasEmpty):
            writer.append(Tag.datagram.rawValue)
            writer.appendOptional(lastRead) { $0.append($1) }
            writer.append(takenAt)
            writer.append(queueWasEmpty)
        }
    }

    public init(reading reader: inout BinaryRecordReader) throws(BinaryRecordError) {
        let start = reader.offset
        switch Tag(rawValue: try reader.readByte()) {
        case .none?:
            evidence = .none
        case .streamBytes?:
            evidence = .streamBytes(try reader.read(UInt64.self))
        case .connections?:
            let count = Int(try reader.read(UInt32.self))
            guard count <= Self.connectionLimit else { throw .invalid("a mark of \(count) connections", at: start) }
            var peers = Set<InetEndpoint>(minimumCapacity: count)
            for _ in 0..<count {
                let length = Int(try reader.readByte())
                var address: [UInt8] = []
                for _ in 0..<length { address.append(try reader.readByte()) }
                guard let ip = IPAddress(bytes: address) else { throw .invalid("an address of \(length) bytes", at: reader.offset - length) }
                peers.insert(InetEndpoint(address: ip, port: try reader.read(UInt16.self)))
            }
            evidence = .connections(peers)
        case .datagram?:
            let lastRead = try reader.readOptional { reader throws(BinaryRecordError) in try reader.read(Int64.self) }
            evidence = .datagram(lastRead: lastRead, takenAt: try reader.read(Int64.self), queueWasEmpty: try reader.readBool())
        case nil:
            throw .invalid("a receive mark of an unknown kind", at: start)
        }
    }
}

extension SocketKind {
    public func write(to writer: inout BinaryRecordWriter) {
        writer.append(Int32(domain))
        writer.append(Int32(type))
        writer.append(isListening)
        writer.append(isConnected)
        writer.appendOptional(localPort) { $0.append($1) }
    }

    public init(reading reader: inout BinaryRecordReader) throws(BinaryRecordError) {
        self.init(domain: CInt(try reader.read(Int32.self)), type: CInt(try reader.read(Int32.self)), isListening: try reader.readBool(),
                  isConnected: try reader.readBool(), localPort: try reader.readOptional { reader throws(BinaryRecordError) in try reader.read(UInt16.self) })
    }
}
