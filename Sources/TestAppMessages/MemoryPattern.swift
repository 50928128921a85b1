/// The pattern the test app writes into memory it is told to fill, and the checksum over it:
/// a test compares the checksum the app reports after its pages went to swap and came back
/// with the one the pattern must give, so a page lost, zeroed or swapped with another shows.
public enum MemoryPattern {
    /// The pattern's 64-bit word at `index`: a pseudo-random word (splitmix64 of the seed
    /// and the index's quarter) written four times over, so that the memory compresses, as
    /// an app's heap does, rather than not at all, as random bytes would. (zram's lzo-rle
    /// keeps it in about a sixth of its size: better than a real heap, see docs/BENCHMARKS.md.)
    @inline(__always)
    public static func word(at index: Int, seed: UInt64) -> UInt64 {
        var z = seed &+ UInt64(index / 4) &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Writes the pattern over `words`.
    public static func fill(_ words: UnsafeMutableBufferPointer<UInt64>, seed: UInt64) {
        for index in words.indices { words[index] = word(at: index, seed: seed) }
    }

    /// The checksum over memory: each word weighted by its position, so that order counts.
    /// Reading it touches every page, bringing back any that were paged out.
    public static func checksum(_ words: UnsafeBufferPointer<UInt64>) -> UInt64 {
        var sum: UInt64 = 0
        for index in words.indices { sum = sum &+ words[index] &* (2 &* UInt64(index) &+ 1) }
        return sum
    }

    /// The checksum that `count` words of the pattern give, computed without the memory.
    public static func expectedChecksum(wordCount count: Int, seed: UInt64) -> UInt64 {
        var sum: UInt64 = 0
        for index in 0..<count { sum = sum &+ word(at: index, seed: seed) &* (2 &* UInt64(index) &+ 1) }
        return sum
    }
}
