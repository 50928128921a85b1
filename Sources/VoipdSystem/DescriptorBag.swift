import Glibc

/// Descriptors owned as a group: those that arrived together (one `SCM_RIGHTS` message), or
/// those to send together. Whatever is not taken out with ``take(_:)`` is closed when the
/// bag goes away, so an error path can never leak one.
public final class DescriptorBag {
    /// The numbers, -1 for one taken: the array received is kept as it is (an array of
    /// optionals was a second allocation and copy for every frame that carried one). Not
    /// checked for exclusive access at run time (about 80 instructions a check, several per
    /// frame): private, and every access below is one read, store or append that runs no
    /// code that could reach the bag while it lasts.
    @exclusivity(unchecked) private var descriptors: [CInt]

    public init(adopting raw: [CInt] = []) { descriptors = raw }

    deinit { closeAll() }

    /// How many descriptors the bag held when it was filled (taken ones included).
    public var count: Int { descriptors.count }

    /// The numbers of the descriptors still in the bag, in order, for `sendmsg`: borrowed,
    /// the bag still owns them.
    public var borrowedNumbers: [CInt] { descriptors.filter { $0 >= 0 } }

    /// Takes ownership of the descriptor at `index` (nil once taken).
    public func take(_ index: Int) -> FileDescriptor? {
        let fd = descriptors[index]
        guard fd >= 0 else { return nil }
        descriptors[index] = -1
        return FileDescriptor(adopting: fd)
    }

    /// Lends each descriptor still in the bag to `body`, in order.
    public func forEach<E: Error>(_ body: (borrowing FileDescriptor) throws(E) -> Void) throws(E) {
        for fd in descriptors where fd >= 0 {
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
        for index in descriptors.indices where descriptors[index] >= 0 {
            // Dropped at once: its deinit closes it.
            _ = FileDescriptor(adopting: descriptors[index])
            descriptors[index] = -1
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
