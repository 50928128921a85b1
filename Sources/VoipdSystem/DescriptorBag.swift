import Glibc

/// Descriptors owned as a group: those that arrived together (one `SCM_RIGHTS` message), or
/// those to send together. Whatever is not taken out with ``take(_:)`` is closed when the
/// bag goes away, so an error path can never leak one.
public final class DescriptorBag {
    private var descriptors: [CInt?]

    public init(adopting raw: [CInt] = []) { descriptors = raw.map { $0 } }

    deinit { closeAll() }

    /// How many descriptors the bag held when it was filled (taken ones included).
    public var count: Int { descriptors.count }

    /// The numbers of the descriptors still in the bag, in order, for `sendmsg`: borrowed,
    /// the bag still owns them.
    public var borrowedNumbers: [CInt] { descriptors.compactMap { $0 } }

    /// Takes ownership of the descriptor at `index` (nil once taken).
    public func take(_ index: Int) -> FileDescriptor? {
        guard let fd = descriptors[index] else { return nil }
        descriptors[index] = nil
        return FileDescriptor(adopting: fd)
    }

    /// Lends each descriptor still in the bag to `body`, in order.
    public func forEach<E: Error>(_ body: (borrowing FileDescriptor) throws(E) -> Void) throws(E) {
        for case let fd? in descriptors {
            // Lent, not given: the number goes back to the bag whatever `body` does.
            let lent = FileDescriptor(adopting: fd)
            let outcome = Result { () throws(E) in try body(lent) }
            _ = lent.release()
            try outcome.get()
        }
    }

    /// Adds a descriptor; the bag owns it from now on.
    public func append(_ descriptor: consuming FileDescriptor) {
        descriptors.append(descriptor.release())
    }

    /// Closes every descriptor not yet taken.
    public func closeAll() {
        for index in descriptors.indices {
            // Dropped at once: its deinit closes it.
            if let fd = descriptors[index] { _ = FileDescriptor(adopting: fd) }
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
