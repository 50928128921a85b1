import Synchronization
import VoipdSystem
import VoipdVocabulary

/// Keeps one line of code from flooding the log: each call site may write `burst` lines
/// per `interval`; the rest are counted, and "N similar messages suppressed" is written
/// once the interval is over (before the next line voipd logs). A client that makes voipd
/// log an error on every request, or a loop meeting the same failure again and again,
/// costs at most `burst` lines per interval and call site.
final class LogRateLimiter: Sendable {
    /// A call site: the address of its file's name (a unique literal) and its line.
    struct Site: Hashable {
        var file: UInt
        var line: UInt
    }

    private struct Window {
        var start: MonotonicInstant
        var written = 0
        var suppressed = 0
        /// "file:line", made when the first line is suppressed.
        var origin = ""
    }

    let burst: Int
    let interval: Duration
    private struct State {
        var windows: [Site: Window] = [:]
        /// Sites with suppressed lines not yet reported.
        var suppressing: Set<Site> = []
    }
    // Logging happens on the daemon's one thread; the lock keeps the type honest as Sendable.
    private let state = Mutex(State())

    init(burst: Int = 100, interval: Duration = .seconds(10)) {
        self.burst = burst
        self.interval = interval
    }

    /// Whether a line from `file`:`line` may be written now, and the summaries of
    /// suppressed lines (of any site) whose interval is over, to write first.
    func admit(file: StaticString, line: UInt, now: MonotonicInstant = .now) -> (admitted: Bool, summaries: [String]) {
        let site = Site(file: UInt(bitPattern: file.utf8Start), line: line)
        return state.withLock { state in
            var summaries: [String] = []
            for other in state.suppressing {
                guard let window = state.windows[other], now - window.start >= interval else { continue }
                summaries.append("\(window.suppressed) similar messages suppressed (\(window.origin))")
                state.windows[other] = nil
                state.suppressing.remove(other)
            }
            var window = state.windows[site] ?? Window(start: now)
            if now - window.start >= interval { window = Window(start: now) }
            let admitted = window.written < burst
            if admitted {
                window.written += 1
            } else {
                if window.suppressed == 0 { window.origin = "\(file):\(line)" }
                window.suppressed += 1
                state.suppressing.insert(site)
            }
            state.windows[site] = window
            // Windows of quiet sites are forgotten, so the table stays as small as the busy sites.
            if state.windows.count > 1024 { state.windows = state.windows.filter { now - $0.value.start < interval || $0.value.suppressed > 0 } }
            return (admitted, summaries)
        }
    }
}
