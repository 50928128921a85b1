/// The state of a dialog that in-dialog requests (ACK for 2xx, BYE) are built from
/// (RFC 3261 12).
struct SIPDialog: Hashable, Sendable {
    let callID: String
    /// Our From (in requests we send), as written, with our tag.
    let localAddress: String
    /// The peer's address, as written, with its tag.
    let remoteAddress: String
    /// The peer's Contact URI.
    let remoteTarget: SIPURI
    /// Route values for requests we send, first hop first.
    let routeSet: [String]
    private(set) var localCSeq: UInt32

    /// The dialog a UAS sets up from an INVITE it answers with `localTag` (RFC 3261 12.1.1).
    init?(asCalleeOf invite: SIPMessage, localTag: String) {
        guard let callID = invite.callID, let to = invite.headers["To"], let from = invite.headers["From"],
            let target = invite.contact?.uri
        else { return nil }
        self.callID = callID
        self.localAddress = "\(to);tag=\(localTag)"
        self.remoteAddress = from
        self.remoteTarget = target
        self.routeSet = invite.headers.values("Record-Route")
        self.localCSeq = 0
    }

    /// The dialog a UAC sets up from a 2xx to its INVITE (RFC 3261 12.1.2): the route set is
    /// the Record-Route in reverse.
    init?(asCallerOf invite: SIPMessage, response: SIPMessage) {
        guard let callID = invite.callID, let from = invite.headers["From"], let to = response.headers["To"],
            let cseq = invite.cseq, let target = response.contact?.uri ?? invite.requestURI
        else { return nil }
        self.callID = callID
        self.localAddress = from
        self.remoteAddress = to
        self.remoteTarget = target
        self.routeSet = response.headers.values("Record-Route").reversed()
        self.localCSeq = cseq.number
    }

    /// The peer's tag.
    var remoteTag: String? { (try? SIPNameAddress(parsing: remoteAddress))?.tag }

    /// Takes the next local CSeq number for a new request.
    mutating func nextCSeq() -> UInt32 {
        localCSeq += 1
        return localCSeq
    }

    /// An in-dialog request (RFC 3261 12.2.1.1), loose or strict routing after the route set.
    func request(_ method: SIPMethod, cseq: UInt32, via: String, extraHeaders: [(name: String, value: String)] = []) -> SIPMessage {
        var uri = remoteTarget
        var routes = routeSet
        if let first = routes.first, let firstHop = try? SIPNameAddress(parsing: first), !firstHop.uri.parameters.contains("lr") {
            // A strict router wants itself as Request-URI and the target as the last Route.
            uri = firstHop.uri
            routes = Array(routes.dropFirst()) + ["<\(remoteTarget)>"]
        }
        return .userAgentRequest(
            method, uri: uri, via: via, from: localAddress, to: remoteAddress,
            callID: callID, cseq: cseq, routes: routes, extraHeaders: extraHeaders)
    }
}
