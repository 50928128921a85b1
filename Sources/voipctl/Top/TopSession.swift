import FoundationEssentials
import Glibc
import VoipClient
import VoipdSystem
import VoipdVocabulary

/// `voipctl top`: voipd's apps, kept up to date from its event stream. A transition makes it
/// ask voipd for the apps again; a timer, every `interval`, reads the figures nothing
/// announces (CPU and memory, counters) and retries a lost connection. Everything happens on
/// one thread, in one poll(2) over the keyboard, the event stream, a signalfd and a timerfd;
/// the screen is written only where it changed.
final class TopSession {
    private let socketPath: String?
    private var control: VoipdControl?
    /// The connection that follows the event stream (VoipdControl makes a new one if voipd
    /// closed it; that one must be made to follow again).
    private var following: ObjectIdentifier?
    private var view: TopView
    private var lastTransitions: [String: TransitionRecord] = [:]
    private var apps: [AppStatus] = []
    private var sampler = CPUSampler()
    private var cpu: [pid_t: CPUFigures] = [:]

    /// Connects to voipd and reads everything once; throws if voipd cannot be reached.
    init(socketPath: String?, view: TopView = TopView()) throws {
        self.socketPath = socketPath
        self.view = view
        try connect()
        try refresh(sampleCPU: true)
    }

    /// What the one-shot table and `--json` print.
    var snapshot: TopView { view }

    // MARK: voipd

    private func connect() throws {
        let control = try VoipdControl(socketPath: socketPath)
        self.control = control
        try follow(control)
        view.unreachable = nil
    }

    private func follow(_ control: VoipdControl) throws {
        lastTransitions = [:]
        for record in try control.events(follow: true) { lastTransitions[record.app] = record }
        following = ObjectIdentifier(control.connection)
    }

    /// Asks voipd for its apps and counters; with `sampleCPU`, reads /proc too.
    private func refresh(sampleCPU: Bool) throws {
        guard let control else { return }
        apps = try control.status()
        let statistics = try control.stats()
        if following != ObjectIdentifier(control.connection) { try follow(control) }
        var figures = view.voipd
        figures.read(prometheus: statistics)
        figures.pid = try? Socket.peerCredentials(control.connection.descriptor).pid
        if sampleCPU {
            cpu = sampler.sample(apps.compactMap(\.pid) + (figures.pid.map { [$0] } ?? []))
        }
        if let pid = figures.pid {
            figures.cpuPercent = cpu[pid]?.percent
            figures.residentBytes = ProcFS.residentBytes(of: pid)
            if let started = ProcFS.startedAfterBoot(pid), let now = ProcFS.uptime { figures.uptimeSeconds = (now - started).seconds }
        }
        view.voipd = figures
        let now = Date().timeIntervalSince1970
        view.update(apps.map { status in
            TopRow(status: status, lastTransition: lastTransitions[status.name], cpu: status.pid.flatMap { cpu[$0] },
                   secondsInState: now - status.since)
        })
    }

    /// voipd went away (or refused us): say so, and try again at the next refresh.
    private func lost(_ error: Error) {
        control = nil
        following = nil
        view.unreachable = "\(error)"
        view.update([])
    }

    private func refreshOrLose(sampleCPU: Bool) {
        do {
            if control == nil { try connect() }
            try refresh(sampleCPU: sampleCPU)
        } catch {
            lost(error)
        }
    }

    /// Takes the transitions that arrived; whether there were any.
    private func readTransitions() -> Bool {
        guard let control else { return false }
        var any = false
        do {
            while let record = try control.nextTransition(timeoutMilliseconds: 0) {
                lastTransitions[record.app] = record
                any = true
            }
        } catch {
            lost(error)
            return true
        }
        return any
    }

    private func perform(_ verb: AppVerb, app: String) {
        guard let control else { return }
        do {
            try control.command(verb, app)
            view.message = "\(verb.rawValue) \(app): accepted"
        } catch let error as VoipdError {
            if case .refused = error {
                view.message = "\(verb.rawValue) \(app): \(error)"
            } else {
                lost(error)
            }
        } catch {
            lost(error)
        }
    }

    // MARK: the live view

    /// Runs until `q` (nil), or a signal that ends it (the signal, to end the process by it
    /// once the terminal is restored).
    func runLive(interval: Duration) throws -> CInt? {
        let signals = try SignalFd(signals: [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGTSTP, SIGCONT])
        let timer = try TimerFd()
        var nextRefresh = MonotonicInstant.now + interval
        try timer.arm(at: nextRefresh)
        let screen = try FullScreen(input: STDIN_FILENO, output: STDOUT_FILENO)
        try screen.enter()
        defer { screen.leave() }
        try screen.draw(TopScreen.lines(&view, width: screen.columns, height: screen.rows))

        while true {
            var descriptors = [pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: signals.descriptor.rawValue, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: timer.descriptor.rawValue, events: Int16(POLLIN), revents: 0)]
            if let control { descriptors.append(pollfd(fd: control.connection.descriptor.rawValue, events: Int16(POLLIN), revents: 0)) }
            // Transitions read along with a reply are already here: look without waiting.
            let buffered = control?.connection.hasBufferedMessages ?? false
            _ = try poll(&descriptors, timeoutMilliseconds: buffered ? 0 : -1)

            while case .processed(let signal) = try signals.next() {
                switch signal {
                case SIGWINCH:
                    screen.resized()
                case SIGTSTP:
                    // ^Z: the terminal as it was for the shell, then stop as SIGTSTP would.
                    screen.leave()
                    takeDefaultAction(of: SIGTSTP)
                    try screen.enter()
                case SIGCONT:
                    // Stopped by someone else meanwhile: the shell had the terminal.
                    try screen.enter()
                case let other:
                    return other
                }
            }
            if descriptors[2].revents != 0, case .processed = try timer.acknowledge() {
                let now = MonotonicInstant.now
                while nextRefresh <= now { nextRefresh += interval }
                try timer.arm(at: nextRefresh)
                refreshOrLose(sampleCPU: true)
            }
            if buffered || descriptors.count > 3 && descriptors[3].revents != 0, readTransitions() {
                refreshOrLose(sampleCPU: false)
            }
            if descriptors[0].revents & Int16(POLLIN) != 0 {
                var bytes = [UInt8](repeating: 0, count: 256)
                let n = bytes.withUnsafeMutableBytes { Glibc.read(STDIN_FILENO, $0.baseAddress, $0.count) }
                if n < 0 && errno != EINTR && errno != EAGAIN { throw Errno.current("read(terminal)") }
                for key in TopKey.decode(Array(bytes.prefix(max(n, 0)))) {
                    switch view.press(key, page: TopScreen.listHeight(screen.rows)) {
                    case .none: break
                    case .quit: return nil
                    case .redrawAll: screen.invalidate()
                    case .command(let verb, let app):
                        perform(verb, app: app)
                        refreshOrLose(sampleCPU: false)
                    }
                }
            } else if descriptors[0].revents & Int16(POLLHUP | POLLERR) != 0 {
                // The terminal is gone, as on SIGHUP.
                return SIGHUP
            }
            try screen.draw(TopScreen.lines(&view, width: screen.columns, height: screen.rows))
        }
    }
}

/// `voipctl top --json`: voipd's figures and each app's cells, under the columns' keys.
struct TopSnapshot: Encodable {
    let voipd: VoipdFigures
    let apps: [Row]

    struct Row: Encodable {
        let cells: [(key: String, value: TopValue)]

        private struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            for cell in cells { try container.encode(cell.value, forKey: Key(stringValue: cell.key)) }
        }
    }

    init(_ view: TopView) {
        voipd = view.voipd
        apps = view.rows.map { row in Row(cells: view.columns.map { (key: $0.key, value: $0.value(row)) }) }
    }
}
