import VoipdProtocol
import VoipdTransfers
import VoipdVocabulary

/// Valid messages of every type, encoded by the same types clients use: the seeds of the
/// frame and message corpora.
enum Samples {
    struct Message {
        var name: String
        var type: MessageType
        var descriptors: Int
        var body: [UInt8]
    }

    static let messages: [Message] = {
        var all: [Message] = []
        func add(_ name: String, _ type: MessageType, _ body: some Encodable, descriptors: Int = 0) {
            do {
                let packet = try RequestChecks.codec.packet(type, body, descriptorCount: descriptors)
                all.append(Message(name: name, type: type, descriptors: descriptors, body: Array(packet.dropFirst(Frame.headerSize))))
            } catch {
                fatalError("sample \(name) does not encode: \(error)")
            }
        }
        add("hello", .hello, HelloRequest(id: 1, name: "softphone"))
        add("registerSocket", .registerSocket, SocketNameRequest(id: 2, name: "sip"), descriptors: 1)
        add("unregisterSocket", .unregisterSocket, SocketNameRequest(id: 3, name: "sip"))
        add("retrieveSocket", .retrieveSocket, SocketNameRequest(id: 4, name: "sip"))
        add("acknowledge", .acknowledge, AcknowledgeMessage(event: 7))
        add("beginBackgroundTask", .beginBackgroundTask, BeginBackgroundTaskRequest(id: 5, name: "upload"))
        add("endBackgroundTask", .endBackgroundTask, EndBackgroundTaskRequest(id: 6, task: 1))
        add("setKeepAliveTimeout", .setKeepAliveTimeout, SetKeepAliveRequest(id: 7, seconds: 600.5))
        add("setKeepAliveTimeout-clear", .setKeepAliveTimeout, SetKeepAliveRequest(id: 8, seconds: nil))
        add("setAudioSessionActive", .setAudioSessionActive, SetAudioSessionActiveRequest(id: 35, active: true))
        add("transferSession", .transferSession, TransferSessionRequest(id: 36, verb: .open, session: "photos", options: TransferOptions()))
        add("transferCreate", .transferCreate, TransferCreateRequest(id: 37, session: "photos", kind: .download, url: "https://example.com/a",
                                                                     headers: ["Accept": "*/*"], path: "/home/alice/a", priority: 0.75))
        add("transferTask", .transferTask, TransferTaskRequest(id: 38, session: "photos", task: 4, verb: .answerChallenge,
                                                               answer: ChallengeAnswerMessage(disposition: .useCredential, user: "alice", password: "pw")))
        add("transfers", .transfers, TransfersRequest(id: 39, app: "softphone"))
        add("launch", .launch, LaunchRequest(id: 9, name: "softphone", arguments: ["/usr/bin/softphone", "--user", "alice"],
                                             environment: ["SIP_SERVER=127.0.0.1:5060"], workingDirectory: "/tmp", background: true,
                                             waitForConnection: true, speaksProtocol: true, exitsOnSuspend: false, relaunchOnData: true),
            descriptors: 2)
        add("launch-manifest", .launch, LaunchRequest(id: 10, name: "softphone", arguments: nil))
        add("status", .status, AppQueryRequest(id: 11, name: "softphone"))
        add("status-all", .status, AppQueryRequest(id: 12))
        add("sockets", .sockets, AppQueryRequest(id: 13))
        for (index, verb) in AppVerb.allCases.enumerated() {
            add("appCommand-\(verb.rawValue)", .appCommand, AppCommandRequest(id: 14 + UInt64(index), verb: verb, name: "softphone"))
        }
        add("systemCommand-lock", .systemCommand, SystemCommandRequest(id: 30, verb: .lock))
        add("systemCommand-memoryPressure", .systemCommand, SystemCommandRequest(id: 31, verb: .memoryPressure, level: .critical, count: 2))
        add("events", .events, EventsRequest(id: 32, name: "softphone", follow: true, to: [.suspended, .terminated]))
        add("stats", .stats, EmptyRequest(id: 33))
        add("upgrade", .upgrade, EmptyRequest(id: 34))
        add("event", .event, EventMessage(event: 3, kind: .voipSocketReadable, socket: "sip", bytesAvailable: 412, peerClosed: false,
                                          state: .background, reason: "data on \"sip\"\n"))
        add("transition", .transition, TransitionRecord(time: 1_700_000_000.25, app: "softphone", from: .background, to: .suspended,
                                                        reason: "nothing left to do"))
        return all
    }()
}
