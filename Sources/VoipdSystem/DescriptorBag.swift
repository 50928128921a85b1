import Glibc

/// Descriptors that arrived together (one `SCM_RIGHTS` message) and are owned as a group:
/// whatever is not taken out with ``take(_:)`` is closed when the bag goes away, so an error
/// path can never leak one.
public final class DescriptorBag {
    private var descriptors: [CInt?]

    public init(adopting raw: [CInt]) { descriptors = raw.map { $0 } }

    deinit { closeAll() }

    /// How many descriptors the bag held when it was filled (taken ones included).
    public var count: Int { descriptors.count }

    /// The raw number at `index`, still owned by the bag (nil once taken).
    public func peek(_ index: Int) -> CInt? { descriptors[index] }

    /// Takes ownership of the descriptor at `index`.
    public func take(_ index: Int) -> FileDescriptor? {
        guard let fd = descriptors[index] else { return nil }
        descriptors[index] = nil
        return FileDescriptor(adopting: fd)
    }

    /// Adds a descriptor; the bag owns it from now on.
    public func append(_ descriptor: consuming FileDescriptor) {
        descriptors.append(descriptor.release())
    }

    /// Closes every descriptor not yet taken.
    public func closeAll() {
        for index in descriptors.indices {
            if let fd = descriptors[index] { _ = Glibc.close(fd) }
            descriptors[index] = nil
        }
    }
}

/// A descriptor owned by a reference: for a class's optional descriptor, which Swift cannot
/// yet test or take out of an optional non-copyable stored property without consuming it.
public final class DescriptorBox {
    public let descriptor: FileDescriptor

    public init(_ descriptor: consuming FileDescriptor) { self.descriptor = descriptor }

    public var rawValue: CInt { descriptor.rawValue }
}
