import Glibc
import VoipdSystem

/// A swap area a test or a benchmark sets up for itself, as root, and takes down again: a
/// swap file (`mkswap`, `swapon`; `swapoff` and unlinked afterwards) or a zram device of
/// its own (`/sys/class/zram-control/hot_add`, else a zram device nobody has set up; its
/// compression algorithm and size, `mkswap`, `swapon`; `swapoff`, `reset` and
/// `hot_remove` afterwards). Tests running at the same time each get their own.
///
/// The area is the whole machine's while it is on: the kernel may put any process's pages
/// there, and it takes them back into memory at `swapoff`. So one exists at a time on the
/// machine, and none while a test needs no swap (``SwapTestLock``): creating a second one
/// waits for the first to be removed.
public final class TemporarySwap {
    public enum Kind: Sendable, Equatable, CustomStringConvertible {
        /// A file in the given directory, allocated with `posix_fallocate`.
        case file(directory: String)
        /// A zram device compressing with `algorithm` (nil: the kernel's default).
        case zram(algorithm: String?)

        public var description: String {
            switch self {
            case .file: return "swap file"
            case .zram(let algorithm): return "zram" + (algorithm.map { " (\($0))" } ?? "")
            }
        }
    }

    public let kind: Kind
    /// What `swapon` was given: the file, or `/dev/zramN`.
    public let path: String
    /// "zramN" for a zram device.
    public let zramDevice: String?
    private let hotAdded: Bool
    private var isOn = false
    private var isRemoved = false
    /// Held until the area is removed.
    private var lock: SwapTestLock?

    /// Sets up an area of `megabytes` with `priority` (the kernel fills the highest first;
    /// at most 32767) and turns it on. Needs root: `EPERM` otherwise. A zram area on a
    /// kernel without zram is `ENOENT`; one whose devices are all in use, `EBUSY`.
    public init(_ kind: Kind, megabytes: Int, priority: Int = 32767) throws {
        guard geteuid() == 0 else { throw Errno(EPERM, call: "\(kind): swapon needs root") }
        lock = try SwapTestLock(exclusive: true)
        self.kind = kind
        switch kind {
        case .file(let directory):
            path = directory + "/swapfile"
            zramDevice = nil
            hotAdded = false
            let file = try openFile(path, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
            let error = posix_fallocate(file.rawValue, 0, off_t(megabytes) << 20)
            guard error == 0 else {
                unlink(path)
                throw Errno(error, call: "posix_fallocate(\(path), \(megabytes) MB)")
            }
        case .zram(let algorithm):
            (zramDevice, hotAdded) = try Self.claimZramDevice(algorithm: algorithm, megabytes: megabytes)
            path = "/dev/" + zramDevice!
        }
        do {
            try Self.run(["mkswap", path])
            try Self.run(["swapon", "--priority", "\(min(priority, 32767))", path])
            isOn = true
        } catch {
            try? remove()
            throw error
        }
    }

    /// The area as the kernel sees it now (`/proc/swaps`).
    public func area() throws -> SwapArea? {
        try SwapSpace.current().areas.first { $0.path == path }
    }

    /// Turns the area off (the kernel reads back what was in it) and removes it. Once.
    public func remove() throws {
        guard !isRemoved else { return }
        isRemoved = true
        var failure: Error?
        if isOn {
            do { try Self.run(["swapoff", path]) } catch { failure = error }
            isOn = false
        }
        switch kind {
        case .file:
            if unlink(path) != 0 && errno != ENOENT { failure = failure ?? Errno.current("unlink(\(path))") }
        case .zram:
            guard let device = zramDevice else { break }
            do {
                try Self.write("1", to: "/sys/block/\(device)/reset")
                if hotAdded { try Self.write(String(device.dropFirst(4)), to: "/sys/class/zram-control/hot_remove") }
            } catch {
                failure = failure ?? error
            }
        }
        lock = nil
        if let failure { throw failure }
    }

    deinit {
        do {
            try remove()
        } catch {
            // A deinit cannot throw: say it where the test's output is.
            let text = "TemporarySwap: \(path) could not be removed: \(error)\n"
            _ = text.withCString { Glibc.write(2, $0, strlen($0)) }
        }
    }

    /// A zram device of this caller's, its algorithm and size set: a new one from
    /// `hot_add`, or else the first whose `disksize` can be set (the kernel refuses it with
    /// `EBUSY` on a device in use, so two callers never get the same one).
    private static func claimZramDevice(algorithm: String?, megabytes: Int) throws -> (String, Bool) {
        var candidates = ZramDevice.all()
        var hotAdded: String?
        if access("/sys/class/zram-control/hot_add", R_OK) == 0 {
            let number = try ProcFS.contents(of: "/sys/class/zram-control/hot_add", limit: 64).filter(\.isNumber)
            hotAdded = "zram" + number
            candidates = [hotAdded!]
        }
        guard !candidates.isEmpty else { throw Errno(ENOENT, call: "no zram device (/sys/block/zram*) and no zram-control") }
        for device in candidates {
            do {
                if let algorithm { try write(algorithm, to: "/sys/block/\(device)/comp_algorithm") }
                try write("\(megabytes << 20)", to: "/sys/block/\(device)/disksize")
                return (device, device == hotAdded)
            } catch Errno.resourceBusy where hotAdded == nil {
                continue
            } catch {
                if let hotAdded { try? write(String(hotAdded.dropFirst(4)), to: "/sys/class/zram-control/hot_remove") }
                throw error
            }
        }
        throw Errno(EBUSY, call: "every zram device is in use: \(candidates.joined(separator: ", "))")
    }

    private static func write(_ text: String, to path: String) throws {
        let file = try openFile(path, flags: O_WRONLY)
        do {
            try file.writeAll(Array(text.utf8))
        } catch {
            throw Errno(error.rawValue, call: "write \(text) to \(path)")
        }
    }

    /// Runs a tool to completion; its output (with its errors) becomes the error's text
    /// if it fails.
    private static func run(_ command: [String]) throws {
        // util-linux's tools live in sbin, which a test's PATH may not have.
        let tool = ["/usr/sbin/", "/sbin/"].map { $0 + command[0] }.first { access($0, X_OK) == 0 } ?? command[0]
        let pipe = try makePipe()
        let readEnd = pipe.first
        let writeEnd = pipe.second
        let process = try spawn(SpawnRequest(arguments: [tool] + command.dropFirst(), environment: currentEnvironment(),
                                             standardOutput: writeEnd.rawValue, standardError: writeEnd.rawValue))
        try writeEnd.close()
        let output = try readEnd.readToEnd(limit: 1 << 20)
        let status = try process.waitForExit()
        guard status == .exited(0) else {
            throw ToolFailed(command: command, status: status, output: String(decoding: output, as: UTF8.self))
        }
    }
}

/// A tool that ended with a failure.
public struct ToolFailed: Error, CustomStringConvertible {
    public var command: [String]
    public var status: ProcessStatus
    public var output: String

    public var description: String { "\(command.joined(separator: " ")): \(status): \(output)" }
}
