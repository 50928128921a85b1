/// The command line's help text.
enum Usage {
    static let text = """
    usage: softphone --registrar HOST:PORT --user NAME [OPTIONS]
           softphone call sip:USER@HOST:PORT [--registrar HOST:PORT] [--hold SECONDS] [OPTIONS]

    A SIP user agent over TCP or UDP, run under voipd (`voipctl launch -- softphone ...`). It
    registers with the registrar, hands its SIP sockets to voipd as VoIP sockets, and
    answers the calls that come: 180 Ringing, then 200 OK with a minimal SDP after
    --answer-after. It logs every SIP message and lifecycle event, with a timestamp, on
    standard output, and its state as a JSON line ("status: {...}") whenever it changes.

    Without --listen it is reachable only through the registrar: over TCP it listens on no
    port, its Contact cannot be resolved, and calls come over the connection its REGISTER
    took (VoIP socket "sip"); over UDP its socket is connected to the registrar, which
    reaches it at the address its REGISTER came from (VoIP socket "sip").

      --registrar HOST:PORT       the registrar/proxy
      --user NAME                 the user part of sip:NAME@HOST:PORT
      --transport udp|tcp         how SIP travels (default tcp)
      --listen ADDRESS:PORT       a Contact at this numeric address: a listening TCP socket
                                  there ("sip-listener"; the registrar may open a new
                                  connection to it: "sip-in-N") or the UDP socket bound
                                  there, receiving from anyone; port 0 for any free port.
                                  voipd refuses to hold these for now (logged): while
                                  suspended, nothing arriving there wakes the phone
      --answer-after SECONDS      how long it rings before answering (default 1)
      --hang-up-after SECONDS     hang up (BYE) this long after the call is established
      --presence HOST:PORT        keep an ordinary TCP connection there, polled in the
                                  foreground (voipd may reclaim it; it reconnects)
      --presence-interval SECONDS between presence polls (default 10)
      --expires SECONDS           registration lifetime asked for (default 3600; more if
                                  the keep-alive needs it)
      --keep-alive SECONDS        voipd's keep-alive interval (default 600, scaled by voipd's
                                  --time-scale); each wake registers again. When the
                                  registrar grants less than it needs, it is lowered (and
                                  logged): never below the minimum voipd permits this
                                  app (600 s unless its manifest's keepAliveMinimum lowers it)
      --unsupervised              run without voipd: never suspended, registrations refreshed
                                  on its own timer

    `softphone call` places one call through the registrar (default: the URI's host and
    port), prints each response with its time, hangs up after --hold, and exits 0 if the
    call was answered, 1 if not, 2 on a usage error. It does not need voipd.

      --hold SECONDS              stay in the call this long, then BYE (default 1)
      --from NAME                 the caller's user part (default caller)
      --transport udp|tcp         how SIP travels (default tcp)
      --cancel-after SECONDS      CANCEL if not answered by then
      --timeout SECONDS           give up (CANCEL) if not answered by then (default 30)
    """
}
