import CVoipd
import Foundation
import Glibc
import VoipdSystem

/// A download's partial file as it is written: the 16 KiB chunks URLSession hands over are
/// gathered into writes of 256 KiB (a sixteenth of the system calls), and the disk is
/// started on the bytes as they come, 8 MiB at a time (`sync_file_range`), waiting for
/// the range two steps back: dirty pages stay bounded, the writing overlaps the transfer,
/// and the flush before the rename into place finds little left to do.
final class PartialFileWriter {
    static let bufferSize = 256 << 10
    static let writeBehindWindow: Int64 = 8 << 20

    private let file: FileDescriptor
    private var buffer: [UInt8] = []
    /// Bytes in the file (the buffer not counted).
    private(set) var written: Int64
    private let start: Int64
    private var writeBackStarted: Int64

    /// `file` is open for writing at its end, which is at `offset`.
    init(file: consuming FileDescriptor, offset: Int64) {
        self.file = file
        written = offset
        start = offset
        writeBackStarted = offset
        buffer.reserveCapacity(Self.bufferSize)
    }

    func append(_ data: Data) throws {
        buffer.append(contentsOf: data)
        if buffer.count >= Self.bufferSize { try flush() }
    }

    /// Writes what is buffered.
    func flush() throws {
        guard !buffer.isEmpty else { return }
        try file.writeAll(buffer)
        written += Int64(buffer.count)
        buffer.removeAll(keepingCapacity: true)
        startWriteBack()
    }

    /// Writes what is buffered and waits until the file's data is on the disk (`fdatasync`).
    func synchronize() throws {
        try flush()
        _ = try valueOrErrno("fdatasync") { fdatasync(file.rawValue) }
    }

    private func startWriteBack() {
        let window = Self.writeBehindWindow
        while written - writeBackStarted >= window {
            _ = voipd_sync_file_range(file.rawValue, off_t(writeBackStarted), off_t(window), voipd_SYNC_FILE_RANGE_WRITE)
            let older = writeBackStarted - 2 * window
            if older >= start {
                _ = voipd_sync_file_range(file.rawValue, off_t(older), off_t(window),
                                          voipd_SYNC_FILE_RANGE_WAIT_BEFORE | voipd_SYNC_FILE_RANGE_WRITE | voipd_SYNC_FILE_RANGE_WAIT_AFTER)
            }
            writeBackStarted += window
        }
    }
}
