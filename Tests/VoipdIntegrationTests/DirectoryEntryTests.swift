import Foundation
import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport

/// `DirectoryEntry.name`, which every `readdir` loop uses: the kernel's records are only as
/// long as their name, so reading the 256-byte `d_name` array whole reads past the last one
/// (found by the suite under AddressSanitizer, in the socket scan of /proc/PID/fd).
@Suite("Directory entries")
struct DirectoryEntryTests {
    @Test("a short record that ends a mapped page: its name is read without touching the next page")
    func recordEndingAPage() throws {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let mapping = mmap(nil, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        let base = try #require(mapping == UnsafeMutableRawPointer(bitPattern: -1) ? nil : mapping)
        defer { munmap(base, 2 * page) }
        try #require(mprotect(base + page, page, PROT_NONE) == 0)
        // A record as getdents64 lays it out: the header, the name and its NUL, padded to 8.
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        let length = (nameOffset + 3 + 7) & ~7
        let record = base + page - length
        record.storeBytes(of: UInt16(length), toByteOffset: MemoryLayout<dirent>.offset(of: \dirent.d_reclen)!, as: UInt16.self)
        for (index, byte) in "42\0".utf8.enumerated() { record.storeBytes(of: byte, toByteOffset: nameOffset + index, as: UInt8.self) }
        #expect(DirectoryEntry.name(record.assumingMemoryBound(to: dirent.self)) == "42")
    }

    @Test("every name of a real directory, up to the longest a file system allows")
    func realDirectory() throws {
        let directory = try makeTemporaryDirectory("voipd-directory-entries")
        defer { removeTree(directory) }
        let names: Set = ["a", "with space", "ünïcode", String(repeating: "n", count: Int(NAME_MAX))]
        for name in names {
            let fd = open(directory + "/" + name, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
            try #require(fd >= 0, "creating \(name.prefix(20)): errno \(errno)")
            close(fd)
        }
        let stream = try #require(opendir(directory))
        defer { closedir(stream) }
        var read: Set<String> = []
        while let entry = readdir(stream) { read.insert(DirectoryEntry.name(entry)) }
        #expect(read == names.union([".", ".."]))
    }

    @Test("no Swift source of the package reads an entry's d_name array whole")
    func noWholeArrayRead() throws {
        let root = URL(fileURLWithPath: packageDirectory)
        let pattern = "pointee." + "d_name"
        var offenders: [String] = []
        for folder in ["Sources", "Tests"] {
            let base = root.appendingPathComponent(folder)
            let files = try #require(FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil))
            for case let file as URL in files where file.pathExtension == "swift" && file.lastPathComponent != "DirectoryEntry.swift" {
                let text = try String(contentsOf: file, encoding: .utf8)
                if text.contains(pattern) { offenders.append(file.path.replacingOccurrences(of: root.path + "/", with: "")) }
            }
        }
        #expect(offenders == [], "use DirectoryEntry.name(entry)")
    }
}
