/// The demo's command line.
struct DemoOptions {
    static let usage = """
    usage: voip-demo [--verbose] [--time-scale FACTOR] [--registrar HOST:PORT] [--user NAME]
                     [--softphone softphone|baresip] [--keep]

    Shows what voipd is for. It starts voipd, a SIP registrar on loopback and a softphone
    under voipd. voipd suspends the softphone in the background (SIGSTOP: no CPU, no
    wake-ups) and holds its SIP connection; a call arrives on it, and voipd resumes the
    softphone in time to ring and answer. A screen lock in between reclaims its other
    connection and keeps that one. It prints, for each call, what happened and when; a
    picture of the softphone's states over time; and its CPU time and wake-ups over the same
    idle second, running and suspended. Every process it starts is stopped at the end.
    Exit status: 0 when everything was shown, 1 with the reason otherwise.

      --verbose              every step as it happens, then the full timeline (milliseconds)
      --time-scale FACTOR    multiply every duration of voipd's lifecycle by FACTOR, more than 0
                             and at most 1 (default 0.2). voipd keeps iOS's durations: 30 s of
                             background time after a wake, 180 s for a background task, 5 to
                             10 s for an app to answer an event. At 0.2 they are 5 times shorter
                             (a wake gets 6 s, not 30), so the demo takes seconds; 1 is real
                             time. The wake itself involves no timer: its latency is real.
      --registrar HOST:PORT  use this SIP server instead of the embedded one, such as Kamailio
                             (Deploy/kamailio/run-kamailio.sh); it must reach a user over the
                             TCP connection of its REGISTER
      --user NAME            the softphone's user (default alice)
      --softphone NAME       softphone (default): the project's softphone, which speaks voipd's
                             protocol; baresip: the same story with baresip (Debian's
                             baresip-core), unmodified: voipd adopts it (finds its SIP sockets
                             itself, suspends it once it measures it quiet); no screen lock
      --keep                 keep the working directory (voipd's log) afterwards

    Colour on a terminal, unless NO_COLOR is set.
    """

    /// Who is called.
    enum Softphone: String {
        /// The project's softphone, speaking voipd's protocol.
        case softphone
        /// baresip, unmodified, adopted by voipd.
        case baresip
    }

    var registrar: (host: String, port: UInt16)?
    var softphone = Softphone.softphone
    var timeScale = 0.2
    var user = "alice"
    var keepDirectory = false
    var verbose = false
    var showHelp = false

    init(parsing arguments: [String]) throws(DemoFailure) {
        var remaining = arguments[...]
        func value(_ flag: String) throws(DemoFailure) -> String {
            guard let next = remaining.popFirst() else { throw DemoFailure("\(flag) needs a value") }
            return next
        }
        while let argument = remaining.popFirst() {
            switch argument {
            case "--registrar":
                let text = try value(argument)
                guard let colon = text.lastIndex(of: ":"), colon != text.startIndex,
                    let port = UInt16(text[text.index(after: colon)...]), port > 0
                else { throw DemoFailure("--registrar needs HOST:PORT, not \(text)") }
                registrar = (String(text[..<colon]), port)
            case "--time-scale":
                let text = try value(argument)
                guard let factor = Double(text), factor > 0, factor <= 1 else {
                    throw DemoFailure("--time-scale needs a number more than 0 and at most 1, not \(text)")
                }
                timeScale = factor
            case "--user": user = try value(argument)
            case "--softphone":
                let text = try value(argument)
                guard let choice = Softphone(rawValue: text) else { throw DemoFailure("--softphone needs softphone or baresip, not \(text)") }
                softphone = choice
            case "--keep": keepDirectory = true
            case "-v", "--verbose": verbose = true
            case "-h", "--help": showHelp = true
            default: throw DemoFailure("unknown argument \(argument)")
            }
        }
    }
}
