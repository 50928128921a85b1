import VoipClient

/// One state change of an app, from voipd's event stream.
struct Transition {
    let time: Double
    let app: String
    let from: String
    let to: String
    let reason: String
}

/// voipd's event stream, followed over a connection of its own.
final class TransitionFeed: EventSource {
    private let follower: VoipdControl
    private(set) var transitions: [Transition] = []

    init(socketPath: String) throws {
        follower = try VoipdControl(socketPath: socketPath)
        for record in try follower.events(follow: true) { keep(record.time, record.app, record.from.rawValue, record.to.rawValue, record.reason) }
    }

    var descriptors: [Int32] { [follower.connection.descriptor.rawValue] }
    var hasBufferedInput: Bool { follower.connection.hasBufferedMessages }

    func service(_ fd: Int32) throws {
        while let record = try follower.nextTransition(timeoutMilliseconds: 0) {
            keep(record.time, record.app, record.from.rawValue, record.to.rawValue, record.reason)
        }
    }

    /// The first transition of `app` into `state` at or after `time`.
    func first(_ app: String, to state: String, since time: Double) -> Transition? {
        transitions.first { $0.app == app && $0.to == state && $0.time >= time }
    }

    private func keep(_ time: Double, _ app: String, _ from: String, _ to: String, _ reason: String) {
        transitions.append(Transition(time: time, app: app, from: from, to: to, reason: reason))
    }
}
