extension SIPMessage {
    /// Notes where a request really came from in its top Via, as a server transport does
    /// (RFC 3261 18.2.1, RFC 3581 4): `received` when the address differs from the sent-by
    /// host, and the source port in `rport` when the sender asked for it. The response then
    /// goes back to that address, which is the only one that works for a sender behind a
    /// NAT or with an unresolvable sent-by.
    public mutating func noteSource(_ source: SIPSocketAddress) {
        guard isRequest, let first = headers.values("Via").first, var via = try? SIPVia(parsing: first) else { return }
        if via.host != source.uriHost && via.host != source.host { via.parameters.set("received", source.host) }
        if via.parameters.contains("rport") { via.parameters.set("rport", "\(source.port)") }
        headers.removeFirstValue("Via")
        headers.addFirst("Via", via.description)
    }
}
