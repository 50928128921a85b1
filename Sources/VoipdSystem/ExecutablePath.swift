import Glibc

/// This executable's path (`/proc/self/exe`), without the " (deleted)" the kernel appends
/// once the file has been replaced (as by a package upgrade).
public func currentExecutablePath() -> String? {
    var buffer = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard n > 0 else { return nil }
    let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return path.hasSuffix(" (deleted)") ? String(path.dropLast(10)) : path
}
