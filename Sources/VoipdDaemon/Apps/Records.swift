import Glibc
import VoipdLifecycle
import VoipdSystem
import VoipdVocabulary

/// A running process of an app, tracked by pidfd. The pidfd stays open until the process
/// is reaped, so its pid cannot be reused under us.
final class AppProcess {
    let pidfd: PidFd
    /// Started by voipd: its stops and exits are reported to voipd (SIGCHLD, waitid).
    let isChild: Bool
    var token: UInt64 = 0
    /// Delay before the next look at /proc for a stop that no SIGCHLD will confirm.
    var stopCheckDelay: Duration = .milliseconds(1)
    /// Signals go to its whole process group: voipd launched it as the leader of a session
    /// of its own (an earlier voipd may have: then it is no longer voipd's child).
    let signalsGroup: Bool
    /// Pid, start time and uid, for the state file (read once, when first needed).
    var identity: ProcessIdentity?

    init(pidfd: consuming PidFd, isChild: Bool, signalsGroup: Bool? = nil) {
        self.pidfd = pidfd
        self.isChild = isChild
        self.signalsGroup = signalsGroup ?? isChild
    }

    var pid: pid_t { pidfd.pid }

    /// Signals the app: a process voipd launched leads a session and process group of its
    /// own, and the whole group gets the signal, so helpers it started stop and die with
    /// it. A process voipd did not start gets it alone, through its pidfd.
    func send(_ signal: CInt) throws {
        if signalsGroup {
            // The group's id is the leader's pid, which cannot be reused while the leader is
            // voipd's unreaped child; a leader that is not voipd's child is first checked to
            // be alive through its pidfd.
            if !isChild { try pidfd.send(0) }
            try signalProcessGroup(pid, signal)
        } else {
            try pidfd.send(signal)
        }
    }
}

/// How to start an app again: what `voipctl launch` (or a manifest) said.
final class LaunchSpecification {
    let arguments: [String]
    let environment: [String]
    let workingDirectory: String?
    /// The account it runs as (nil: voipd's own).
    let account: ResolvedManifest.Account?
    /// Where its output and errors go (descriptors owned here, closed with it), or voipd's
    /// own when nil.
    let standardOutput: FileDescriptor?
    let standardError: FileDescriptor?

    init(arguments: [String], environment: [String], workingDirectory: String?, account: ResolvedManifest.Account? = nil,
         standardOutput: consuming FileDescriptor? = nil, standardError: consuming FileDescriptor? = nil) {
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.account = account
        self.standardOutput = standardOutput
        self.standardError = standardError
    }

    /// The numbers of the output and error descriptors (borrowed: still owned here).
    var standardOutputNumber: CInt? {
        switch standardOutput {
        case .some(let descriptor): return descriptor.rawValue
        case .none: return nil
        }
    }

    var standardErrorNumber: CInt? {
        switch standardError {
        case .some(let descriptor): return descriptor.rawValue
        case .none: return nil
        }
    }

    /// Lends `body` the output and error descriptors it holds.
    func forEachOutput<E: Error>(_ body: (borrowing FileDescriptor) throws(E) -> Void) throws(E) {
        switch standardOutput {
        case .some(let descriptor): try body(descriptor)
        case .none: break
        }
        switch standardError {
        case .some(let descriptor): try body(descriptor)
        case .none: break
        }
    }
}

/// Everything voipd knows about one app, alive or not.
final class AppRecord {
    let name: String
    /// The uid that owns it: only this uid or root may act on it.
    var uid: uid_t
    /// Known only by sockets a service manager gave back, with no manifest: the first
    /// app to say hello under its name claims it (the fd store keeps no owner).
    var unclaimed = false
    var lifecycle: AppLifecycle
    var process: AppProcess?
    var launch: LaunchSpecification?
    /// The client connection it identified itself on.
    var client: UInt64?
    var reclaimedSockets = 0
    /// Sockets already reclaimed (by inode), so a second reclaim does not count them again.
    var reclaimedInodes: Set<UInt64> = []
    /// Wall-clock time of the last state change.
    var since: Double
    /// When the data that woke the app was seen, and the event that told it: the wake's
    /// latency is measured to its acknowledgement.
    var wakeSeenAt: MonotonicInstant?
    var wakeEvent: (id: UInt64, seenAt: MonotonicInstant)?
    /// `launch` requests waiting for the app to connect: (client, request id).
    var launchWaiters: [(client: UInt64, request: UInt64)] = []

    init(name: String, uid: uid_t, lifecycle: AppLifecycle, since: Double) {
        self.name = name
        self.uid = uid
        self.lifecycle = lifecycle
        self.since = since
    }
}

/// A connection on the control socket: an app (after `hello`) or a controller.
final class ClientConnection {
    let id: UInt64
    let descriptor: FileDescriptor
    let credentials: PeerCredentials
    var token: UInt64 = 0
    /// The app this connection identified as.
    var appName: String?
    /// `events --follow`: the app to follow, or "" for all.
    var following: String?
    /// With `following`: only transitions to these states (nil: all).
    var followingStates: Set<AppState>?
    /// Packets the kernel could not take yet, with the descriptors that go with them.
    var outbound: [(packet: [UInt8], descriptors: DescriptorBag)] = []
    /// What `outbound` costs (``ClientQueues/cost(of:descriptors:)``).
    var queuedBytes = 0
    var closing = false
    /// When it last made a request (or connected): see `limits.helloTimeout`.
    var lastRequestAt: MonotonicInstant = .origin


    init(id: UInt64, descriptor: consuming FileDescriptor, credentials: PeerCredentials) {
        self.id = id
        self.descriptor = descriptor
        self.credentials = credentials
    }

    /// A pidfd for the peer process (``Socket/peerProcess(_:credentials:)``).
    func peerProcess() throws -> PidFd {
        try Socket.peerProcess(descriptor, credentials: credentials)
    }

    /// Whether the peer has closed its end (voipd may not have read the end of stream yet).
    var peerHasClosed: Bool { Socket.peerHasClosed(descriptor) }

    /// Bytes of requests waiting to be read (0 if that cannot be known).
    var bytesAvailable: Int { (try? Socket.bytesAvailable(descriptor)) ?? 0 }
}
