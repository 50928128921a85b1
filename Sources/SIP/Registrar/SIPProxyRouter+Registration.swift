extension SIPProxyRouter {
    /// Binds the user in To to the flow the REGISTER came on (RFC 3261 10.3, with the flow
    /// standing in for the Contact address, which may be unresolvable).
    mutating func register(_ request: SIPMessage, from connection: ConnectionID, at now: ContinuousClock.Instant) -> [Output] {
        guard let user = request.to?.uri.user else {
            return [.send(.response(to: request, statusCode: 400, reasonPhrase: "No User in To", toTag: SIPIdentifiers.tag()), to: connection)]
        }
        var ok = SIPMessage.response(to: request, statusCode: 200, toTag: SIPIdentifiers.tag())
        let contactValues = request.headers.values("Contact")
        if contactValues == ["*"] {
            guard request.expires == 0 else {
                return [.send(.response(to: request, statusCode: 400, reasonPhrase: "Wildcard Needs Expires 0", toTag: SIPIdentifiers.tag()), to: connection)]
            }
            bindings[user] = nil
            return [.send(ok, to: connection)]
        }
        if let contact = request.contact {
            let asked = contact.parameters["expires"].flatMap(Int.init) ?? request.expires ?? maximumExpires
            let expires = min(max(0, asked), maximumExpires)
            if expires == 0 {
                bindings[user] = nil
            } else {
                bindings[user] = Binding(connection: connection, contact: contact, expiresAt: now + .seconds(expires))
            }
        } else if !contactValues.isEmpty {
            return [.send(.response(to: request, statusCode: 400, reasonPhrase: "Bad Contact", toTag: SIPIdentifiers.tag()), to: connection)]
        }
        if let binding = liveBinding(for: user, at: now) {
            var contact = binding.contact
            let remaining = Int(((binding.expiresAt - now) / .seconds(1)).rounded())
            contact.parameters.set("expires", "\(max(0, remaining))")
            ok.headers.add("Contact", contact.description)
        }
        return [.send(ok, to: connection)]
    }

    /// The user's binding if it has not expired (an expired one is removed).
    mutating func liveBinding(for user: String, at now: ContinuousClock.Instant) -> Binding? {
        guard let binding = bindings[user] else { return nil }
        guard binding.expiresAt > now else {
            bindings[user] = nil
            return nil
        }
        return binding
    }
}
