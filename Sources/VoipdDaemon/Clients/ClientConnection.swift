import VoipdSystem
import VoipdVocabulary

/// A connection on the control socket: an app (after `hello`) or a controller.
///
/// An in-place upgrade carries its ``State`` over as it is (Codable), with its descriptor,
/// credentials and queue; a field added to `State` survives an upgrade by itself.
@dynamicMemberLookup
final class ClientConnection {
    /// What the connection said about itself, read and written as its fields (`client.appName`).
    struct State: Codable, Equatable {
        /// The app this connection identified as.
        var appName: AppID?
        /// `events --follow`: the app to follow, or "" for all.
        var following: String?
        /// With `following`: only transitions to these states (nil: all).
        var followingStates: Set<AppState>?
    }

    let id: UInt64
    let descriptor: FileDescriptor
    let credentials: PeerCredentials
    var state = State()
    var token: UInt64 = 0
    /// Packets the kernel could not take yet, with the descriptors that go with them.
    var outbound: [(packet: [UInt8], descriptors: DescriptorBag)] = []
    /// What `outbound` costs (``ClientQueues/cost(of:descriptors:)``).
    var queuedBytes = 0
    /// The rest of a long list reply, written a frame at a time as the kernel takes them
    /// (after `outbound`): nil when none is under way. Meanwhile voipd reads no further
    /// request from this connection, so that no other reply comes in the middle of the list.
    var listing: (() -> [UInt8]?)?
    var closing = false
    /// When it last made a request (or connected): see `limits.helloTimeout`.
    var lastRequestAt: MonotonicInstant = .origin

    init(id: UInt64, descriptor: consuming FileDescriptor, credentials: PeerCredentials) {
        self.id = id
        self.descriptor = descriptor
        self.credentials = credentials
    }

    subscript<Value>(dynamicMember field: WritableKeyPath<State, Value>) -> Value {
        get { state[keyPath: field] }
        _modify { yield &state[keyPath: field] }
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
