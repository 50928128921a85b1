import Foundation
import Testing
@testable import VoipdProtocol
import VoipdVocabulary

/// The listings' replies (`status`, `sockets`, `events`) and their request, read directly by
/// clients: whatever the direct reader takes, it reads as JSONDecoder does.
@Suite("Direct JSON of the listings")
struct DirectJSONListingsTests {
    static let bare = AppStatus(name: "bare", pid: nil, state: .notRunning, voipSockets: 0, wakes: 0, connected: false, uid: 0,
                                launchedByVoipd: false, terminationReason: nil, backgroundTasks: 0, keepAliveSeconds: nil, launches: 0,
                                reclaimedSockets: 0, residentBytes: nil, since: 0, arguments: nil)

    /// Every optional field set, every nested value there.
    static var full: AppStatus {
        var app = AppStatus(name: "linphone", pid: 4242, state: .suspended, voipSockets: 3, wakes: 17, connected: true, uid: 4_294_967_295,
                            launchedByVoipd: true, terminationReason: TerminationReason(.crashed, "signal 11"), backgroundTasks: 2,
                            keepAliveSeconds: 600, launches: 5, reclaimedSockets: 9, residentBytes: UInt64.max, since: 1795331360.6424584,
                            arguments: ["/usr/bin/linphonec", "-c", "/home/u/.linphonerc", ""], suspension: "cgroup v2 freezer",
                            inCallSeconds: 12.5, swappedBytes: 0,
                            hibernation: HibernationStatus(state: .hibernated, dirtyBytes: 1 << 40, limitBytes: 256 << 20, swap: "zram0 (lzo-rle)"),
                            reachable: false)
        app.keepAliveMinimumSeconds = 600
        app.reachableForSeconds = 3.0e-7
        app.keepAliveWarning = "the registrar grants 300 s, less than the keep-alive minimum"
        app.adoption = AdoptionStatus(rules: ["sip", "udp:local=*:5062"], adopted: ["tcp 127.0.0.1:5060 (sip: a SIP port)"], ignored: 4,
                                      lastLook: 1e9, warning: nil, activity: "quiet")
        return app
    }

    /// Apps that vary in each optional field, and what is nested.
    static var apps: [AppStatus] {
        var others: [AppStatus] = []
        for state in [HibernationStatus.State.pagingOut, .hibernated, .overLimit] {
            var app = full
            app.hibernation = HibernationStatus(state: state, dirtyBytes: 0, limitBytes: 1, swap: nil)
            app.terminationReason = TerminationReason(.watchdog, "")
            app.adoption = AdoptionStatus(rules: [], adopted: [], ignored: 0, lastLook: nil, warning: "no socket matched", activity: nil)
            app.arguments = []
            app.pid = -1
            others.append(app)
        }
        return [bare, full] + others
    }

    static func body(_ value: some Encodable) throws -> String {
        String(decoding: try DirectJSONDecodingTests.encoder.encode(value), as: UTF8.self)
    }

    @Test("status replies are read directly, and as JSONDecoder reads them")
    func status() throws {
        for apps in [[], [Self.bare], Self.apps] {
            for more in [false, true] {
                let body = try Self.body(Reply(id: 3, result: StatusResult(apps: apps), more: more))
                #expect(DirectJSONDecodingTests.agree(Reply<StatusResult>.self, body), "\(body)")
                let read = try WireCodec().decode(Reply<StatusResult>.self, from: Array(body.utf8)[...])
                #expect(read.result?.apps == apps)
            }
        }
        #expect(DirectJSONDecodingTests.agree(Reply<StatusResult>.self, #"{"id":1,"ok":false,"error":{"code":"noSuchApp","message":"no app x"}}"#))
        #expect(DirectJSONDecodingTests.agree(StatusResult.self, #" { "apps" : [ ] , "future" : { "a" : [ 1 ] } } "#))
    }

    @Test("sockets and events replies are read directly, and as JSONDecoder reads them")
    func socketsAndEvents() throws {
        let sockets = [HeldSocketStatus(app: "a", name: "sip", kind: "tcp", bytesAvailable: 0, peerClosed: false, watching: true, registeredAt: 1e9),
                       HeldSocketStatus(app: "b", name: "l", kind: "tcp", role: "listening", bytesAvailable: 0, connectionsWaiting: 2,
                                        peerClosed: false, watching: false, registeredAt: 1795331360.6424584)]
        let transitions = [TransitionRecord(time: 1795331360.6424584, app: "a", from: .background, to: .suspended, reason: "expired"),
                           TransitionRecord(time: 0.5, app: "b", from: .notRunning, to: .active, reason: "launched")]
        for count in [0, 1, 2] {
            let socketsBody = try Self.body(Reply(id: 1, result: SocketsResult(sockets: Array(sockets.prefix(count)))))
            #expect(DirectJSONDecodingTests.agree(Reply<SocketsResult>.self, socketsBody), "\(socketsBody)")
            let eventsBody = try Self.body(Reply(id: 2, result: EventsResult(transitions: Array(transitions.prefix(count)))))
            #expect(DirectJSONDecodingTests.agree(Reply<EventsResult>.self, eventsBody), "\(eventsBody)")
        }
    }

    @Test("what the direct reader leaves, JSONDecoder accepts or refuses")
    func leftToFoundation() throws {
        var escaped = Self.full
        escaped.arguments = ["a \"quoted\" argument"]
        var unknownState = try Self.body(StatusResult(apps: [Self.full]))
        unknownState = unknownState.replacingOccurrences(of: #""state":"suspended""#, with: #""state":"fromTheFuture""#)
        let left = [
            try Self.body(StatusResult(apps: [escaped])),
            unknownState,
            #"{"apps":[{"name":"x"}]}"#,
            #"{"apps":[1,]}"#,
            #"{"apps":{}}"#,
            #"{"apps":["#,
            #"{"apps":[],"apps":[]}"#,
            try Self.body(StatusResult(apps: [Self.bare])).replacingOccurrences(of: #""uid":0"#, with: #""uid":-1"#),
            try Self.body(StatusResult(apps: [Self.bare])).replacingOccurrences(of: #""uid":0"#, with: #""uid":4294967296"#),
            try Self.body(StatusResult(apps: [Self.full])).replacingOccurrences(of: #""code":"crashed""#, with: #""code":"eaten""#),
        ]
        for body in left {
            #expect(!DirectJSONDecodingTests.agree(StatusResult.self, body), "\(body)")
        }
        // An escaped string is JSONDecoder's, and still read.
        let read = try WireCodec().decode(StatusResult.self, from: Array(try Self.body(StatusResult(apps: [escaped])).utf8)[...])
        #expect(read.apps == [escaped])
    }

    @Test("status replies are written directly, as JSONEncoder writes them, in frames as a list reply splits them")
    func statusWritten() throws {
        var apps = Self.apps
        for text in DirectJSONTests.awkward {
            var app = Self.full
            app.name = text
            app.arguments = [text, text]
            app.suspension = text
            app.keepAliveWarning = text
            app.terminationReason = TerminationReason(.exited, text)
            app.hibernation = HibernationStatus(state: .overLimit, dirtyBytes: 7, limitBytes: 8, swap: text)
            app.adoption = AdoptionStatus(rules: [text], adopted: [text, ""], ignored: -1, lastLook: 0.5, warning: text, activity: text)
            app.since = 1795331360
            app.keepAliveSeconds = 0.1
            app.inCallSeconds = 1e-9
            app.pid = Int32.min
            apps.append(app)
        }
        for app in apps {
            #expect(DirectJSONTests.direct(app) == (try DirectJSONTests.foundation(app)))
        }
        for list in [[], [Self.bare], apps] {
            let result = StatusResult(apps: list)
            #expect(DirectJSONTests.direct(result) == (try DirectJSONTests.foundation(result)))
            // Whole, as a list reply's one frame writes it.
            var writer = try #require(ListReplyWriter<StatusResult>(id: 9))
            let packets = writer.packets(of: list)
            #expect(packets.count == 1)
            #expect(String(decoding: packets[0].dropFirst(Frame.headerSize), as: UTF8.self) == (try DirectJSONTests.foundation(Reply(id: 9, result: result))))
        }
    }

    @Test("a listing's request is written as JSONEncoder writes it, and read back directly")
    func request() throws {
        for name in [nil] + DirectJSONTests.awkward {
            let request = AppQueryRequest(id: UInt64.max, name: name)
            let written = DirectJSONTests.direct(request)
            #expect(written == (try DirectJSONTests.foundation(request)))
            DirectJSONDecodingTests.agree(AppQueryRequest.self, written)
        }
        #expect(DirectJSONDecodingTests.agree(AppQueryRequest.self, #"{"id":5}"#))
        #expect(DirectJSONDecodingTests.agree(AppQueryRequest.self, #"{"id":5,"name":null}"#))
        #expect(DirectJSONDecodingTests.agree(AppQueryRequest.self, #"{"name":"linphone","id":5}"#))
        #expect(!DirectJSONDecodingTests.agree(AppQueryRequest.self, #"{"name":"linphone"}"#))
    }
}
