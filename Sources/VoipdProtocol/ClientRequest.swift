/// A client's request, decoded from a validated frame: the one place that says which body
/// each message type carries and how many descriptors may come with it. Everything a client
/// sends passes through ``init(type:body:descriptorCount:codec:)`` before the daemon acts
/// on it, so it is also what the fuzz targets under Tests/Fuzz feed.
public enum ClientRequest {
    case hello(HelloRequest)
    case registerSocket(SocketNameRequest)
    case unregisterSocket(SocketNameRequest)
    case retrieveSocket(SocketNameRequest)
    case acknowledge(AcknowledgeMessage)
    case beginBackgroundTask(BeginBackgroundTaskRequest)
    case endBackgroundTask(EndBackgroundTaskRequest)
    case setKeepAliveTimeout(SetKeepAliveRequest)
    case setAudioSessionActive(SetAudioSessionActiveRequest)
    case transferSession(TransferSessionRequest)
    case transferCreate(TransferCreateRequest)
    case transferTask(TransferTaskRequest)
    case launch(LaunchRequest)
    case status(AppQueryRequest)
    case sockets(AppQueryRequest)
    case appCommand(AppCommandRequest)
    case systemCommand(SystemCommandRequest)
    case events(EventsRequest)
    /// `stats` has no fields; its body is not read.
    case stats
    case upgrade(EmptyRequest)
    case transfers(TransfersRequest)

    /// Decodes the body of a frame of `type` that arrived with `descriptorCount` descriptors.
    /// A type only voipd sends or a wrong number of descriptors is a framing error (the
    /// connection is closed); a body that does not decode is a `badRequest`.
    public init(type: MessageType, body: ArraySlice<UInt8>, descriptorCount: Int, codec: WireCodec) throws(ProtocolError) {
        guard type.isRequest else {
            throw ProtocolError(.unknownType, "\(type) is sent by voipd, not to it")
        }
        guard descriptorCount <= type.maximumDescriptorsFromClient else {
            throw ProtocolError(.tooManyDescriptors, "\(type) carries at most \(type.maximumDescriptorsFromClient) descriptors, \(descriptorCount) arrived; all were closed")
        }
        guard descriptorCount >= type.minimumDescriptorsFromClient else {
            throw ProtocolError(.badRequest, "\(type) must carry \(type.minimumDescriptorsFromClient) descriptor, none arrived")
        }
        switch type {
        case .hello: self = .hello(try codec.decode(HelloRequest.self, from: body))
        case .registerSocket: self = .registerSocket(try codec.decode(SocketNameRequest.self, from: body))
        case .unregisterSocket: self = .unregisterSocket(try codec.decode(SocketNameRequest.self, from: body))
        case .retrieveSocket: self = .retrieveSocket(try codec.decode(SocketNameRequest.self, from: body))
        case .acknowledge: self = .acknowledge(try codec.decode(AcknowledgeMessage.self, from: body))
        case .beginBackgroundTask: self = .beginBackgroundTask(try codec.decode(BeginBackgroundTaskRequest.self, from: body))
        case .endBackgroundTask: self = .endBackgroundTask(try codec.decode(EndBackgroundTaskRequest.self, from: body))
        case .setKeepAliveTimeout: self = .setKeepAliveTimeout(try codec.decode(SetKeepAliveRequest.self, from: body))
        case .setAudioSessionActive: self = .setAudioSessionActive(try codec.decode(SetAudioSessionActiveRequest.self, from: body))
        case .transferSession: self = .transferSession(try codec.decode(TransferSessionRequest.self, from: body))
        case .transferCreate: self = .transferCreate(try codec.decode(TransferCreateRequest.self, from: body))
        case .transferTask: self = .transferTask(try codec.decode(TransferTaskRequest.self, from: body))
        case .launch: self = .launch(try codec.decode(LaunchRequest.self, from: body))
        case .status: self = .status(try codec.decode(AppQueryRequest.self, from: body))
        case .sockets: self = .sockets(try codec.decode(AppQueryRequest.self, from: body))
        case .appCommand: self = .appCommand(try codec.decode(AppCommandRequest.self, from: body))
        case .systemCommand: self = .systemCommand(try codec.decode(SystemCommandRequest.self, from: body))
        case .events: self = .events(try codec.decode(EventsRequest.self, from: body))
        case .stats: self = .stats
        case .upgrade: self = .upgrade(try codec.decode(EmptyRequest.self, from: body))
        case .transfers: self = .transfers(try codec.decode(TransfersRequest.self, from: body))
        case .reply, .event, .transition, .transferProgress: throw ProtocolError(.unknownType, "\(type) is sent by voipd, not to it")
        }
    }
}
