extension SIPCallee {
    /// Sends a REGISTER for the configured lifetime (or refreshes the registration).
    public mutating func register() -> [Action] {
        if case .registered = registrationState {} else { registrationState = .registering }
        return [.send(makeRegister(expires: requestedExpires)), .log("registering \(configuration.addressOfRecord)")]
    }

    /// Sends a REGISTER with `Expires: 0`, removing the binding.
    public mutating func unregister() -> [Action] {
        registrationState = .unregistering
        return [.cancelTimer(.registrationRefresh), .send(makeRegister(expires: 0)), .log("unregistering")]
    }

    /// When to refresh a registration granted for `expires` seconds: shortly before it lapses,
    /// so a suspended phone is woken as rarely as possible.
    public static func refreshDelay(forGrantedExpiry expires: Int) -> Duration {
        .seconds(max(1, expires - min(expires / 2, 30)))
    }

    mutating func refreshRegistration() -> [Action] {
        guard case .registered = registrationState else { return [] }
        return register()
    }

    mutating func makeRegister(expires: Int) -> SIPMessage {
        registrationCSeq += 1
        let aor = configuration.addressOfRecord
        return .userAgentRequest(
            .register, uri: configuration.registrarURI,
            via: SIPMessage.userAgentVia(host: configuration.contactHost),
            from: "<\(aor)>;tag=\(registrationFromTag)", to: "<\(aor)>", callID: registrationCallID, cseq: registrationCSeq,
            extraHeaders: [
                ("Contact", configuration.contact), ("Expires", "\(expires)"), ("User-Agent", configuration.userAgent),
            ])
    }

    mutating func registrationResponse(_ response: SIPMessage) -> [Action] {
        guard response.callID == registrationCallID, response.cseq?.number == registrationCSeq,
            let status = response.statusCode, status >= 200
        else { return [] }
        if status == 423, let minimum = response.headers["Min-Expires"].flatMap(Int.init), minimum > requestedExpires {
            requestedExpires = minimum
            return [.log("registrar wants at least \(minimum) s")] + register()
        }
        guard status < 300 else {
            registrationState = .failed(statusCode: status)
            return [.report(.registrationFailed(statusCode: status)), .log("registration failed: \(response.summary)")]
        }
        let granted = grantedExpiry(in: response)
        if registrationState == .unregistering || granted == 0 {
            registrationState = .unregistered
            return [.cancelTimer(.registrationRefresh), .report(.unregistered), .log("unregistered")]
        }
        registrationState = .registered(expires: granted)
        return [
            .startTimer(.registrationRefresh, after: Self.refreshDelay(forGrantedExpiry: granted)),
            .report(.registered(expires: granted)),
            .log("registered for \(granted) s"),
        ]
    }

    // The registrar may grant less than asked; it says so in the expires parameter of our
    // Contact in the 200 OK (RFC 3261 10.2.4), or in Expires.
    private func grantedExpiry(in response: SIPMessage) -> Int {
        let contacts = response.contacts
        let ours = contacts.first { $0.uri.user == configuration.user && $0.uri.host == configuration.contactHost }
        let expires = (ours ?? contacts.first)?.parameters["expires"].flatMap(Int.init) ?? response.expires
        return expires ?? requestedExpires
    }
}
