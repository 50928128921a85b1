/// The softphone's ordinary connection: a presence poll. Once connected it says
/// `HELLO USER`, then `POLL` every interval while in the foreground; the server answers each
/// line with a line.
///
/// It is not a VoIP socket, so voipd may reclaim it while the app is suspended (on a screen
/// lock, under memory pressure). The app keeps it open in the background because reopening
/// is not free, so it must handle the failure (TN2277): the first read after the resume
/// ends or fails, the link says so and reconnects.
final class PresenceLink {
    enum Timer: Hashable {
        case poll
        case reconnect
    }

    let server: HostPort
    let user: String
    let interval: Duration
    private(set) var connection: TCPConnection?
    private var received: [UInt8] = []
    private var timers = TimerTable<Timer>()
    private var paused = false
    private var reconnectDelay = PresenceLink.firstReconnectDelay

    static let connectTimeout: Duration = .seconds(3)
    static let firstReconnectDelay: Duration = .seconds(1)
    static let longestReconnectDelay: Duration = .seconds(60)

    init(server: HostPort, user: String, interval: Duration) {
        self.server = server
        self.user = user
        self.interval = interval
    }

    var fileDescriptor: Int32? { connection?.fd }
    var nextDeadline: ContinuousClock.Instant? { timers.earliest }

    /// Opens the connection and says hello; on failure, tries again later.
    func connect() {
        timers.cancel(.reconnect)
        do {
            let opened = try TCPConnection.connect(to: server, timeout: Self.connectTimeout)
            connection = opened
            received.removeAll()
            reconnectDelay = Self.firstReconnectDelay
            Log.write("presence", "connected to \(opened.remoteAddress) from \(opened.localAddress) (an ordinary socket: voipd may reclaim it)")
            send("HELLO \(user)")
            if !paused { timers.arm(.poll, after: .zero) }
        } catch {
            Log.write("presence", "cannot connect: \(error); again in \(reconnectDelay)")
            timers.arm(.reconnect, after: reconnectDelay)
            reconnectDelay = min(reconnectDelay * 2, Self.longestReconnectDelay)
        }
    }

    /// The quiescent mode of this protocol is not polling: nothing to send, nothing to
    /// wait for, so it suits didEnterBackground.
    func pause() {
        paused = true
        timers.cancel(.poll)
    }

    /// Back in the foreground: poll at once (and find out whether the connection survived).
    func resume() {
        paused = false
        if connection == nil {
            connect()
        } else {
            timers.arm(.poll, after: .zero)
        }
    }

    /// Reads the server's lines; an end or an error means the connection is gone.
    func readAvailable() {
        guard let connection else { return }
        switch connection.read() {
        case .nothing:
            return
        case .closed(let reason):
            lose("read: \(reason)")
        case .bytes(let bytes):
            received += bytes
            while let newline = received.firstIndex(of: 0x0A) {
                let line = String(decoding: received[..<newline], as: UTF8.self)
                received.removeSubrange(...newline)
                Log.write("presence", "received \"\(line)\"")
            }
        }
    }

    func fireDueTimers(at now: ContinuousClock.Instant) {
        for timer in timers.takeDue(at: now) {
            switch timer {
            case .poll:
                send("POLL")
                if !paused { timers.arm(.poll, after: interval) }
            case .reconnect:
                connect()
            }
        }
    }

    private func send(_ line: String) {
        guard let connection else { return }
        do {
            try connection.send(Array((line + "\n").utf8))
            Log.write("presence", "sent \"\(line)\"")
        } catch {
            lose("\(error)")
        }
    }

    private func lose(_ reason: String) {
        guard connection != nil else { return }
        connection = nil
        timers.cancel(.poll)
        Log.write("presence", "connection lost (\(reason)); reconnecting")
        // From the loop, not from here: a connection that fails at once must not recurse.
        timers.arm(.reconnect, after: .zero)
    }
}
