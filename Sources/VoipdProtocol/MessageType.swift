/// The type of a frame (a little-endian u16 in its header). Values are fixed forever;
/// docs/PROTOCOL.md lists each with its body and descriptors.
public enum MessageType: UInt16, Sendable, CaseIterable {
    // App → voipd.
    case hello = 1
    case registerSocket = 2
    case unregisterSocket = 3
    case retrieveSocket = 4
    case acknowledge = 5
    case beginBackgroundTask = 6
    case endBackgroundTask = 7
    case setKeepAliveTimeout = 8
    case setAudioSessionActive = 9
    case transferSession = 10
    case transferCreate = 11
    case transferTask = 12
    // Control (voipctl) → voipd.
    case launch = 16
    case status = 17
    case sockets = 18
    case appCommand = 19
    case systemCommand = 20
    case events = 21
    case stats = 22
    case upgrade = 23
    case transfers = 24
    // voipd → client.
    case reply = 128
    case event = 129
    case transition = 130
    /// A running app's task moved bytes (not acknowledged).
    case transferProgress = 131

    /// The most descriptors a frame of this type may carry from a client.
    public var maximumDescriptorsFromClient: Int {
        switch self {
        case .registerSocket: return 1
        case .launch: return 2
        default: return 0
        }
    }

    /// The most descriptors any client frame carries; room is made for a few more, so that
    /// "too many" is reported precisely before the kernel starts cutting (MSG_CTRUNC).
    public static let descriptorRoomFromClient = 4

    /// The least descriptors a frame of this type must carry from a client.
    public var minimumDescriptorsFromClient: Int { self == .registerSocket ? 1 : 0 }

    /// Whether a client may send it (replies and events flow the other way).
    public var isRequest: Bool { rawValue < 128 }
}
