import Glibc
import VoipdSystem

/// Swap is the whole machine's: a test that sets up a swap area and one that shows what
/// happens without swap must not run at the same time, in this process or in another (CI
/// and the engineers of a shared machine run several test processes at once). An `flock`
/// on a file in `/run/lock`: exclusive while a ``TemporarySwap`` exists, shared while a test
/// relies on there being none. Released when the value goes.
public final class SwapTestLock {
    private let file: FileDescriptor

    /// The lock file: a fixed path, as the lock is for one machine-wide resource.
    public static let path = "/run/lock/voipd-tests-swap.lock"

    /// Waits for the lock. `exclusive`: to set up swap; otherwise to need none set up.
    public init(exclusive: Bool) throws {
        // Read-only is enough for flock, and lets a test that is not root use a file root made.
        file = try openFile(Self.path, flags: O_RDONLY | O_CREAT, mode: 0o644)
        _ = try valueOrErrno("flock(\(Self.path))") { flock(file.rawValue, exclusive ? LOCK_EX : LOCK_SH) }
    }

    /// The shared lock, for a test that shows what happens without swap; throws when swap
    /// is on all the same (the machine's own, which no test sets up).
    public static func withoutSwap() throws -> SwapTestLock {
        let lock = try SwapTestLock(exclusive: false)
        let areas = try SwapSpace.current().areas
        guard areas.isEmpty else { throw Errno(EEXIST, call: "swap is on: \(areas.map(\.path).joined(separator: ", "))") }
        return lock
    }
}
