import FoundationEssentials
import Glibc
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// Everything a running voipd knows, for an in-place upgrade: the new program reads it and
/// carries on where the old one stopped. Descriptors are kept by number (they survive the
/// exec); every app's lifecycle goes as it is.
///
/// A program reads only the format it writes. Whatever the format, `format` and each app's
/// `name`, `process` and `processCgroup` keep their place and shape (``SnapshotEnvelope``),
/// so that a program that refuses the rest can still leave no app stopped or frozen.
struct DaemonSnapshot: Codable {
    /// The format this program writes and reads. Raise it whenever the encoding changes (a
    /// field added, renamed or retyped, here or in what is encoded with it, such as
    /// `AppLifecycle` or a record's `State`): a snapshot of another format is refused, never
    /// misread. Format 1 had no number; format 3 keeps each record's own state; format 4 the
    /// client table's and persistence's; format 5 the state file's lock; format 6 the held
    /// sockets as binary records (``HeldSocketTable``, whose layout has a number of its own)
    /// and their epoll set. An optional field whose absence means what the programs without
    /// it did (``App/processCgroup``) is read right by both, and needs no new format: a new
    /// one would refuse the upgrade from those programs.
    static let currentFormat = 6

    var format = DaemonSnapshot.currentFormat

    /// The largest snapshot read: a thousand apps with long command lines and full queues
    /// take tens of MB.
    static let largest = 1 << 30
    /// A connection, with its descriptor and the descriptors of the frames it has not
    /// read yet.
    struct Client: Codable {
        var id: UInt64
        var descriptor: CInt
        var credentials: PeerCredentials
        var state: ClientConnection.State
        /// Frames the kernel had not taken yet, with their descriptors.
        var outbound: [Queued]
    }

    struct Queued: Codable {
        var packet: [UInt8]
        var descriptors: [CInt]
    }

    /// An app's process. Its shape is ``SnapshotEnvelope``'s: it must not change.
    struct Process: Codable {
        var pid: Int32
        var pidfd: CInt
        var isChild: Bool
        /// Absent in snapshots of voipds before the state file: as `isChild`.
        var signalsGroup: Bool?
    }

    struct Launch: Codable {
        var command: LaunchCommand
        var standardOutput: CInt?
        var standardError: CInt?
    }

    /// An app: its own state and lifecycle as they are, its process and launch with their
    /// descriptors. `name` and `process` keep the place ``SnapshotEnvelope`` reads them from.
    struct App: Codable {
        var name: String
        var process: Process?
        /// The process's identity as the state file records it, if it was read already.
        var processIdentity: ProcessIdentity?
        /// The cgroup the process is suspended in (``AppProcess/cgroup``), reopened by the new
        /// program whatever its own configuration says: a frozen app is thawed only there.
        /// Absent from older programs' snapshots (the new program's freezer finds it then).
        var processCgroup: CarriedCgroup?
        var state: AppRecord.State
        var lifecycle: AppLifecycle
        var launch: Launch?
    }

    /// Where an app's process has its cgroup.
    struct CarriedCgroup: Codable {
        var path: String
        var version: CgroupVersion
    }

    /// The state file as the old program last wrote it, with nothing changed since: the new
    /// program writes it again only after a change (each write reads every app's process
    /// in /proc).
    struct WrittenStateFile: Codable {
        var path: String
        /// The processes it names.
        var processes: [ProcessIdentity]
        /// The apps whose held sockets changed since (``StateFile/socketsChanged``). Nil from
        /// a program that did not list sockets in the file: the new one writes it again.
        var socketsChanged: [AppID]?
    }

    /// A timer as it was set. Its key is nil when it is of a kind this program does not know
    /// (a newer program's, on an upgrade to an older one): that timer is dropped, not the
    /// snapshot (``Daemon/restore(_:)`` logs it).
    struct Timer: Codable {
        var key: DaemonTimer?
        var deadline: MonotonicInstant
        var tolerance: Duration

        init(key: DaemonTimer, deadline: MonotonicInstant, tolerance: Duration) {
            self.key = key
            self.deadline = deadline
            self.tolerance = tolerance
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            key = try? container.decode(DaemonTimer.self, forKey: .key)
            deadline = try container.decode(MonotonicInstant.self, forKey: .deadline)
            tolerance = try container.decode(Duration.self, forKey: .tolerance)
        }
    }

    var listener: CInt
    /// The lock on the state file (``StateFile/lock``), if it has one.
    var stateLock: CInt?
    /// Nil when the state file was not up to date (or there is none).
    var stateFileWritten: WrittenStateFile?
    var clientTable: ClientTable.State
    var persistence: Persistence.State
    var locked: Bool
    var clients: [Client]
    var apps: [App]
    /// The held sockets' epoll set, carried with its registrations (their tokens are in
    /// ``heldSockets``).
    var eventLoop: EventLoop.Carried
    var heldSockets: HeldSocketTable
    var timers: [Timer]
    var events: [TransitionRecord]
    var metrics: Metrics
    /// The pidfds of transfer agents killed for an upgrade and not yet ended (``EndingAgents``);
    /// nil from a program that carried none over.
    var endingAgents: [CInt]?
    /// The `upgrade` request to answer once the new program runs.
    var requester: PendingReply?

    /// Reads a snapshot from a descriptor (a memfd the old program wrote), and closes it. A
    /// snapshot this program cannot read is refused: every app process it names is resumed
    /// first, so that none is left stopped by a voipd that is about to exit.
    static func read(from file: consuming FileDescriptor) throws -> DaemonSnapshot {
        let data = Data(try file.readToEnd(limit: largest))
        // Read whole at once (the envelope alone costs as much to parse): only a snapshot
        // this program cannot take is read again for its envelope.
        let failure: any Error
        do {
            let snapshot = try JSONDecoder().decode(DaemonSnapshot.self, from: data)
            if snapshot.format == currentFormat { return snapshot }
            failure = UpgradeRefused(description: "format \(snapshot.format)")
        } catch {
            failure = error
        }
        let envelope: SnapshotEnvelope
        do {
            envelope = try JSONDecoder().decode(SnapshotEnvelope.self, from: data)
        } catch {
            throw UpgradeRefused(description: "cannot read the upgrade state: \(error)")
        }
        let format = envelope.format ?? 1
        guard format == currentFormat else {
            throw UpgradeRefused(description: "the old program wrote its state in format \(format), and this voipd reads format "
                                 + "\(currentFormat): upgrade refused; \(envelope.resumeProcesses()) apps resumed so that none is left stopped")
        }
        throw UpgradeRefused(description: "cannot read the upgrade state: \(failure); \(envelope.resumeProcesses()) apps resumed so that none is left stopped")
    }
}

/// What every snapshot format keeps in place: its number (absent in format 1) and each
/// app's process, with the cgroup it may be frozen in (absent before format 6's programs
/// carried it).
struct SnapshotEnvelope: Decodable {
    struct App: Decodable {
        var name: String
        var process: DaemonSnapshot.Process?
        var processCgroup: DaemonSnapshot.CarriedCgroup?
    }

    var format: Int?
    var apps: [App]

    /// Continues every app process (the old program may have stopped it, or frozen it in its
    /// cgroup: thawed there) and returns how many it continued (one that is gone already is
    /// left stopped by no one). Their pidfds are closed.
    func resumeProcesses() -> Int {
        var resumed = 0
        for app in apps {
            guard let saved = app.process else { continue }
            if let carried = app.processCgroup {
                do {
                    try AppCgroup(path: carried.path, version: carried.version).thaw()
                } catch {
                    // Gone with its process, or not voipd's to write: the SIGCONT still goes,
                    // and the next voipd thaws it by its record.
                }
            }
            let process = AppProcess(pidfd: PidFd(adopting: FileDescriptor(adopting: saved.pidfd), pid: saved.pid), isChild: saved.isChild)
            do {
                try SignalSuspender().resume(process)
                resumed += 1
            } catch {
                continue
            }
        }
        return resumed
    }
}

/// An in-place upgrade the new program cannot carry out: it exits with this, and the
/// service manager starts voipd afresh.
struct UpgradeRefused: Error, CustomStringConvertible {
    var description: String
}
