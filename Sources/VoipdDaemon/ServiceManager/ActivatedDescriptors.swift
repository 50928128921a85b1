import Glibc
import VoipdSystem

/// Descriptors a service manager passed at start (`$LISTEN_FDS`, `$LISTEN_FDNAMES`): the
/// control socket (socket activation) and VoIP sockets from the file descriptor store. Every
/// one is owned here until taken: those nobody takes are closed with it.
final class ActivatedDescriptors {
    /// What one passed descriptor is, by the name it was passed under.
    enum Entry: Equatable {
        /// "control", or the only socket passed without a store name.
        case controlSocket
        /// "APP/SOCKET": a held VoIP socket.
        case heldSocket(app: String, name: String)
        /// "APP/#record": an app's record (a memfd of JSON: owner, how to start it).
        case record(app: String)
        /// "APP/#process": an app's process (a pidfd).
        case process(app: String)
        /// Anything else: not a name voipd gave.
        case unknown(name: String)
    }

    /// The descriptors, in the order passed (3, 4, …).
    private let passed: DescriptorBag
    /// What each is, in the same order.
    let entries: [Entry]

    init() {
        passed = DescriptorBag()
        entries = []
    }

    /// Takes the descriptors from the environment, if `$LISTEN_PID` is this process; they
    /// start at 3 (`firstDescriptor`, for tests). Each is made close-on-exec: the service
    /// manager passes them without.
    init(environment: [String: String], firstDescriptor: CInt = 3) {
        guard let pid = environment["LISTEN_PID"].flatMap(pid_t.init), pid == getpid(),
              let count = environment["LISTEN_FDS"].flatMap(Int.init), count > 0 else {
            passed = DescriptorBag()
            entries = []
            return
        }
        let names = (environment["LISTEN_FDNAMES"] ?? "").split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        let bag = DescriptorBag()
        var entries: [Entry] = []
        for index in 0..<count {
            guard let descriptor = FileDescriptor(inherited: firstDescriptor + CInt(index)) else { continue }
            let isSocket = (try? Socket.kind(of: descriptor)) != nil
            entries.append(Self.entry(named: index < names.count ? names[index] : "unknown", passedAlone: count == 1) { isSocket })
            bag.append(descriptor)
        }
        passed = bag
        self.entries = entries
    }

    /// What a descriptor passed under `name` is. A lone socket without a store name is the
    /// control socket, whatever its type (which the daemon then checks).
    static func entry(named name: String, passedAlone: Bool, isSocket: () -> Bool) -> Entry {
        let parts = name.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        if name == "control" || (passedAlone && parts.count == 1 && isSocket()) { return .controlSocket }
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return .unknown(name: name) }
        switch parts[1] {
        case StoredApp.recordName: return .record(app: parts[0])
        case StoredApp.processName: return .process(app: parts[0])
        default: return .heldSocket(app: parts[0], name: parts[1])
        }
    }

    /// Takes the descriptor of entry `index` (each is taken once).
    func take(_ index: Int) -> FileDescriptor? { passed.take(index) }

    /// Takes the control socket, if one was passed.
    func takeControlSocket() -> FileDescriptor? {
        guard let index = entries.firstIndex(of: .controlSocket) else { return nil }
        return passed.take(index)
    }
}
