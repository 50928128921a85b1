/// A suspended app's hibernation (seed 004), as `status` reports it. To the lifecycle the
/// app is `suspended` all along; this says where its memory is.
public struct HibernationStatus: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable {
        /// Its memory is being paged out.
        case pagingOut
        /// Paged out, until the next resume.
        case hibernated
        /// Its dirty memory is over the limit: it stays suspended, and memory pressure ends
        /// it first.
        case overLimit
    }

    public var state: State
    /// Private dirty memory and swap, measured when hibernation was decided.
    public var dirtyBytes: UInt64
    /// `hibernation.dirtyLimitMB`.
    public var limitBytes: UInt64
    /// Where the pages went ("zram0 (lzo-rle)", "file /swapfile"); nil when there was no
    /// swap, so that only pages files back were paged out.
    public var swap: String?

    public init(state: State, dirtyBytes: UInt64, limitBytes: UInt64, swap: String?) {
        self.state = state
        self.dirtyBytes = dirtyBytes
        self.limitBytes = limitBytes
        self.swap = swap
    }
}
