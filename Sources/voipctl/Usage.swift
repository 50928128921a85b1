/// The help text of every verb.
enum Usage {
    static let general = """
    usage: voipctl [--socket PATH] [--json] VERB [ARGS...]

    Talks to voipd over its control socket (--socket, else $VOIPD_SOCKET, else
    $XDG_RUNTIME_DIR/voipd.sock, or /run/voipd/voipd.sock as root).

    Apps:
      launch [OPTIONS] -- CMD [ARGS...]   start CMD under supervision; prints its name
      launch [--background] [--wait] NAME start the app of a manifest
      status [NAME]                       apps, their states and held sockets
      sockets [NAME]                      held VoIP sockets
      background NAME | foreground NAME   move an app between foreground and background
      interrupt NAME | interrupt-end NAME an interruption (active ⇄ inactive)
      terminate NAME                      willTerminate, then SIGKILL (suspended: SIGKILL)
      kill NAME                           force quit: SIGKILL, no willTerminate
      reclaim NAME                        reclaim a suspended app's ordinary sockets
      forget NAME                         drop a dead app and close its held sockets
    System:
      lock | unlock                       lock the screen (reclaims suspended apps' sockets)
      memory-pressure [--critical] [--count N]
      events [--follow] [--to STATE] [NAME] state transitions, one per line
      stats                               counters, Prometheus text format
      upgrade                             re-execute voipd in place, keeping every app and socket

    Every verb takes --help. Exit status: 0 ok, 1 failure, 2 usage, 3 no such app or
    voipd not running.
    """

    static func verb(_ verb: String) -> String? {
        switch verb {
        case "launch":
            return """
            usage: voipctl launch [--name NAME] [--background] [--wait] [--output FILE] [--env KEY=VALUE]...
                                  [--cwd DIR] [--no-protocol] [--exits-on-suspend] [--no-relaunch] -- CMD [ARGS...]
                   voipctl launch [--background] [--wait] NAME

              With a command, starts it under supervision (as the caller, when voipd runs as
              root). With a NAME alone, starts the app its manifest describes (the apps
              directory of voipd's configuration, /etc/voipd/apps.d by default).

              --name NAME         the app's name (default: the command's base name)
              --background        start in the background rather than the foreground
              --wait              return once the app has connected to voipd
              --output FILE       append the app's standard output and error to FILE
              --env KEY=VALUE     add to the app's environment (repeatable)
              --cwd DIR           working directory
              --no-protocol       the program does not talk to voipd: suspend and resume it silently
              --exits-on-suspend  terminate it instead of suspending it (UIApplicationExitsOnSuspend)
              --no-relaunch       do not relaunch it when data arrives after it died
            """
        case "status": return "usage: voipctl status [--json] [NAME]\n\n  One line per app; --json prints {\"apps\": [...]}."
        case "sockets": return "usage: voipctl sockets [--json] [NAME]\n\n  The VoIP sockets voipd holds; --json prints {\"sockets\": [...]}."
        case "background", "foreground", "interrupt", "interrupt-end", "terminate", "kill", "reclaim", "forget":
            return "usage: voipctl \(verb) [--json] NAME"
        case "lock", "unlock": return "usage: voipctl \(verb) [--json]"
        case "memory-pressure":
            return """
            usage: voipctl memory-pressure [--critical] [--count N] [--json]

              Reclaims suspended apps' ordinary sockets, then ends N apps (default 1):
              suspended ones first, largest resident memory first, then background ones;
              foreground apps only with --critical.
            """
        case "events": return "usage: voipctl events [--follow] [--to STATE]... [--json] [NAME]\n\n  One line per transition: time, app, from, to, reason; --to keeps only transitions to\n  those states (notRunning, active, inactive, background, suspended, terminated)."
        case "stats": return "usage: voipctl stats [--json]\n\n  Counters in the Prometheus text exposition format (for node_exporter's textfile\n  collector); --json wraps the text as {\"prometheus\": …}."
        case "upgrade":
            return """
            usage: voipctl upgrade [--json]

              voipd re-executes its program file (the new version, if a package replaced it),
              keeping every app, connection and held socket; suspended apps stay suspended.
              The same as sending voipd SIGUSR2.
            """
        default: return nil
        }
    }
}
