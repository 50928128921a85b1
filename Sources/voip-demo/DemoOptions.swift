/// The demo's command line.
struct DemoOptions {
    static let usage = """
    usage: voip-demo [--registrar HOST:PORT] [--time-scale FACTOR] [--user NAME] [--keep]

    Starts voipd, a SIP registrar/proxy on loopback and the softphone under supervision;
    backgrounds the softphone until it is suspended, calls it (the wake, the ring, the
    answer), locks the screen (its ordinary socket is reclaimed, its SIP connection kept),
    calls it again, and prints a timeline with the wake latency. Exits 0 on success, 1 with
    the reason on any failure; every process it started is stopped either way.

      --registrar HOST:PORT  use this SIP server (e.g. Kamailio with Deploy/kamailio/) instead
                             of the embedded registrar; it must reach a user over the TCP
                             connection of its REGISTER
      --time-scale FACTOR    voipd's --time-scale (default 0.2: a call gets 6 s of
                             background time instead of 30)
      --user NAME            the softphone's user (default alice)
      --keep                 keep the working directory (voipd's log) afterwards
    """

    var registrar: (host: String, port: UInt16)?
    var timeScale = 0.2
    var user = "alice"
    var keepDirectory = false
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
                    throw DemoFailure("--time-scale needs a number in (0, 1], not \(text)")
                }
                timeScale = factor
            case "--user": user = try value(argument)
            case "--keep": keepDirectory = true
            case "-h", "--help": showHelp = true
            default: throw DemoFailure("unknown argument \(argument)")
            }
        }
    }
}
