extension SIPCallee {
    /// Sends a REGISTER for the configured lifetime (or refreshes the registration).
    public mutating func register() -> [Action] {
        if case .registered = registrationState {} else { registrationState = .registering }
        return [
            .cancelTimer(.registrationRetry), .send(makeRegister(expires: requestedExpires)),
            .log("registering \(configuration.addressOfRecord) for \(requestedExpires) s"),
        ]
    }

    /// Sends a REGISTER with `Expires: 0`, removing the binding.
    public mutating func unregister() -> [Action] {
        registrationState = .unregistering
        return [.cancelTimer(.registrationRefresh), .cancelTimer(.registrationRetry), .send(makeRegister(expires: 0)), .log("unregistering")]
    }

    /// The first delay before registering again after a failure; it doubles with each
    /// failure in a row, up to ``longestRetryDelay``.
    public static let firstRetryDelay: Duration = .seconds(1)
    /// The longest delay between two failed attempts.
    public static let longestRetryDelay: Duration = .seconds(60)

    /// When to refresh a registration granted for `expires` seconds: shortly before it lapses,
    /// so a suspended phone is woken as rarely as possible.
    public static func refreshDelay(forGrantedExpiry expires: Int) -> Duration {
        .seconds(max(1, expires - min(expires / 2, 30)))
    }

    mutating func refreshRegistration() -> [Action] {
        guard case .registered = registrationState else { return [] }
        return register()
    }

    mutating func retryRegistration() -> [Action] {
        guard case .failed = registrationState else { return [] }
        return register()
    }

    mutating func makeRegister(expires: Int) -> SIPMessage {
        registrationCSeq += 1
        let aor = configuration.addressOfRecord
        return .userAgentRequest(
            .register, uri: configuration.registrarURI,
            via: configuration.newVia(),
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
            if registrationState == .unregistering {
                registrationState = .unregistered
                return [.report(.unregistered), .log("unregistering failed: \(response.summary)")]
            }
            // A phone that stays unregistered misses every call: try again, less and less often.
            registrationState = .failed(statusCode: status)
            let delay = retryDelay
            retryDelay = min(retryDelay * 2, Self.longestRetryDelay)
            return [
                .startTimer(.registrationRetry, after: delay), .report(.registrationFailed(statusCode: status)),
                .log("registration failed: \(response.summary); again in \(delay)"),
            ]
        }
        retryDelay = Self.firstRetryDelay
        let granted = grantedExpiry(in: response)
        if registrationState == .unregistering || granted == 0 {
            registrationState = .unregistered
            registrationSchedule = nil
            return [.cancelTimer(.registrationRefresh), .report(.unregistered), .log("unregistered")]
        }
        registrationState = .registered(expires: granted)
        var refreshDelay = Self.refreshDelay(forGrantedExpiry: granted)
        if let policy = configuration.wakePolicy {
            let schedule = SIPRegistrationSchedule(granted: granted, policy: policy)
            registrationSchedule = schedule
            refreshDelay = .seconds(schedule.refreshDelay)
        }
        return [
            .startTimer(.registrationRefresh, after: refreshDelay),
            .report(.registered(expires: granted)),
            .log("registered for \(granted) s"),
        ]
    }

    // The registrar may grant less than asked; it says so in the expires parameter of our
    // Contact in the 200 OK (RFC 3261 10.2.4), or in Expires.
    private func grantedExpiry(in response: SIPMessage) -> Int {
        let contacts = response.contacts
        // A registrar lists every binding of the address of record, other devices' and stale
        // ones of an earlier run included.
        let ours = contacts.first {
            $0.uri.user == configuration.user && $0.uri.host == configuration.contactHost && $0.uri.port == configuration.contactPort
        }
        let expires = (ours ?? contacts.first)?.parameters["expires"].flatMap(Int.init) ?? response.expires
        return expires ?? requestedExpires
    }
}
