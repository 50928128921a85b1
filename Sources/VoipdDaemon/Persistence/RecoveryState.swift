import Glibc
import VoipdSystem

/// What a voipd writes down about its apps so that the next one, started after it died
/// without a service manager's store (SIGKILL, a crash, the OOM killer), finds the apps it
/// left stopped, resumes them, and supervises them again as the apps they were: whose each
/// one is, how to start it, and which process is it. Written to the state file
/// (``StateFile``) whenever that changes, and always before voipd stops a process, so a
/// process voipd may have stopped is in it. docs/CONFIGURATION.md describes the file.
struct RecoveryState: Codable {
    static let currentVersion = 1

    /// The format's version: a voipd reads the versions it knows.
    var version: Int
    /// /proc/sys/kernel/random/boot_id when written: after a reboot the pids and start
    /// times name nothing, and the whole file is ignored.
    var bootID: String
    /// The voipd that wrote it.
    var writer: pid_t
    var apps: [App]

    /// One app: the fd store's record of it, under its name, and its process.
    struct App: Codable {
        var name: String
        /// Owner, policy and how to start it (the same record the service manager's store keeps).
        var record: StoredApp
        /// Its process, when it had one.
        var process: Process?
        /// It was in the foreground (active or inactive): it is taken back there.
        var foreground: Bool
        /// The VoIP sockets voipd held for its process, by inode. The next voipd copies back
        /// from the app's processes those the service manager's store did not give it, and
        /// keeps a process it finds stopped or frozen so only if it then holds every one
        /// (``Daemon/keepOrResumeStoppedSurvivors(recorded:)``); one it cannot get back (the
        /// app closed its copy) has the process resumed, to register it again. Nil when not
        /// known (no process recorded, an inode that could not be read, a voipd that did not
        /// record them, an entry this voipd cannot read): nothing is copied, and a process
        /// found stopped stays so if voipd holds a socket of its app from the store, as
        /// before the list existed, and is resumed if it holds none.
        var sockets: [Socket]?
    }

    /// A held VoIP socket of an app's process, as the state file names it.
    struct Socket: Codable, Equatable {
        var name: String
        /// What the socket is, as `sockets` lists it ("tcp", "udp listening").
        var kind: String
        var origin: HeldSocketOrigin
        /// The socket's inode: the same socket in any process's descriptor table.
        var inode: UInt64
    }

    /// A process of an app, as voipd knew it.
    struct Process: Codable {
        /// Pid, start time and real uid: the process must still match all three.
        var identity: ProcessIdentity
        /// voipd launched it as the leader of a session of its own and signalled its whole
        /// group: helpers it started were stopped with it, and are continued with it.
        var leadsGroup: Bool
        /// How voipd stops it, so that the next voipd undoes a stop the same way.
        var suspension: Suspension
    }

    /// How a process is stopped (``Suspender``). A voipd that meets a case it does not know
    /// leaves that app out (``init(from:)``) instead of failing on the whole file.
    enum Suspension: Codable, Equatable {
        /// SIGSTOP, undone by SIGCONT.
        case signal
        /// The cgroup freezer, in the app's cgroup: the next voipd thaws it there, whatever
        /// its own configuration says.
        case cgroup(path: String, version: CgroupVersion)
    }

    init(bootID: String, apps: [App]) {
        version = Self.currentVersion
        self.bootID = bootID
        writer = getpid()
        self.apps = apps
    }

    /// Apps that do not decode (a newer voipd's additions, a damaged entry) are skipped,
    /// and counted in ``skipped``; the rest of the file still counts.
    init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(Int.self, forKey: .version)
        bootID = try container.decode(String.self, forKey: .bootID)
        writer = try container.decode(pid_t.self, forKey: .writer)
        var list = try container.nestedUnkeyedContainer(forKey: .apps)
        apps = []
        skipped = 0
        while !list.isAtEnd {
            do {
                apps.append(try list.decode(App.self))
            } catch {
                // A failed decode does not move past the element: step over it.
                _ = try list.decode(Skipped.self)
                skipped += 1
            }
        }
    }

    /// Entries that could not be read (not written).
    private(set) var skipped = 0

    private enum CodingKeys: String, CodingKey {
        case version, bootID, writer, apps
    }

    private struct Skipped: Decodable {
        init(from decoder: Decoder) throws {}
    }
}

extension RecoveryState.App {
    private enum CodingKeys: String, CodingKey {
        case name, record, process, foreground, sockets
    }

    /// Sockets that do not decode (an origin of a newer voipd's) make the list unknown, not
    /// the app unreadable: the app's process is still resumed.
    init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        record = try container.decode(StoredApp.self, forKey: .record)
        process = try container.decodeIfPresent(RecoveryState.Process.self, forKey: .process)
        foreground = try container.decode(Bool.self, forKey: .foreground)
        do {
            sockets = try container.decodeIfPresent([RecoveryState.Socket].self, forKey: .sockets)
        } catch {
            // Unknown: the process is resumed rather than kept stopped on a partial list.
            sockets = nil
        }
    }
}
