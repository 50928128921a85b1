import Glibc

/// The entries `readdir` returns.
public enum DirectoryEntry {
    /// The name of `entry`, read where it lies, up to its NUL.
    ///
    /// Never `entry.pointee.d_name`: that copies the whole 256-byte array, but the kernel's
    /// records are only as long as their name (`d_reclen`, 24 bytes for a short one), and the
    /// last record in readdir's buffer may end before the array would. The copy then reads
    /// past the buffer (AddressSanitizer's heap-buffer-overflow in the suite), and faults when
    /// the record ends a mapped page.
    public static func name(_ entry: UnsafePointer<dirent>) -> String {
        let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        return String(cString: (UnsafeRawPointer(entry) + offset).assumingMemoryBound(to: CChar.self))
    }

    /// The names in the directory at `path`, in no particular order, without `.` and `..`.
    /// What `FileManager.contentsOfDirectory(atPath:)` gives, without what it brings along
    /// at first use (its state, and a `URL` parsed for the error it may throw): voipd reads
    /// its apps directory before READY=1.
    public static func names(in path: String) throws(Errno) -> [String] {
        guard let directory = opendir(path) else { throw Errno.current("opendir(\(path))") }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = Self.name(entry)
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
