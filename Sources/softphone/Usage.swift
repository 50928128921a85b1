/// The command line's help text.
enum Usage {
    static let text = """
    usage: softphone --registrar HOST:PORT --user NAME [OPTIONS]
           softphone call sip:USER@HOST:PORT [--registrar HOST:PORT] [--hold SECONDS] [OPTIONS]

    A SIP user agent over TCP, run under voipd (`voipctl launch -- softphone ...`). It
    registers over one TCP connection, hands that connection to voipd as its VoIP socket
    "sip", listens on no port, and answers the calls that come over it: 180 Ringing, then
    200 OK with a minimal SDP after --answer-after. It logs every SIP message and lifecycle
    event, with a timestamp, on standard output.

      --registrar HOST:PORT       the registrar/proxy (TCP)
      --user NAME                 the user part of sip:NAME@HOST:PORT
      --answer-after SECONDS      how long it rings before answering (default 1)
      --hang-up-after SECONDS     hang up (BYE) this long after the call is established
      --presence HOST:PORT        keep an ordinary TCP connection there, polled in the
                                  foreground (voipd may reclaim it; it reconnects)
      --presence-interval SECONDS between presence polls (default 10)
      --expires SECONDS           registration lifetime asked for (default 3600)
      --keep-alive SECONDS        voipd's keep-alive interval (default and minimum 600,
                                  scaled by voipd's --time-scale); each wake re-registers

    `softphone call` places one call through the registrar (default: the URI's host and
    port), prints each response with its time, hangs up after --hold, and exits 0 if the
    call was answered, 1 if not, 2 on a usage error. It does not need voipd.

      --hold SECONDS              stay in the call this long, then BYE (default 1)
      --from NAME                 the caller's user part (default caller)
      --cancel-after SECONDS      CANCEL if not answered by then
      --timeout SECONDS           give up (CANCEL) if not answered by then (default 30)
    """
}
