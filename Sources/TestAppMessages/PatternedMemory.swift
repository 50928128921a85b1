import Glibc
import VoipdSystem

/// Anonymous memory of its own mapping, filled with ``MemoryPattern``: what the hibernation
/// tests and benchmark page out and expect back intact (the test app's `fillMemory`,
/// `voipd-bench memory-app`). Unmapped when dropped.
public final class PatternedMemory {
    private let words: UnsafeMutableBufferPointer<UInt64>

    /// Maps `megabytes` of private anonymous memory and writes the pattern over it.
    public init(megabytes: Int, seed: UInt64) throws {
        let bytes = megabytes << 20
        guard megabytes > 0, let address = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              address != MAP_FAILED else {
            throw Errno(megabytes > 0 ? errno : EINVAL, call: "mmap(\(megabytes) MB)")
        }
        words = UnsafeMutableBufferPointer(start: address.bindMemory(to: UInt64.self, capacity: bytes / 8), count: bytes / 8)
        MemoryPattern.fill(words, seed: seed)
    }

    public var megabytes: Int { (words.count * 8) >> 20 }

    /// The checksum over the memory as it reads now.
    public func checksum() -> UInt64 { MemoryPattern.checksum(UnsafeBufferPointer(words)) }

    deinit { munmap(words.baseAddress, words.count * 8) }
}
