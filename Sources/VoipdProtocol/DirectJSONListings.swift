import VoipdVocabulary

// The listings (`status`, `sockets`, `events`) as a client reads them, and their request,
// directly (DirectJSON.swift, DirectJSONReader.swift). `voipctl status` is a program's whole
// run, so what counts is a first use: read with JSONDecoder, this reply cost Codable's
// generic machinery for each new type (the runtime looking conformances up and instantiating
// metadata), half of the instructions of a `voipctl status` (docs/BENCHMARKS.md, "Start-up
// and memory at start"). voipd writes them directly too: a `status` reply written by
// JSONEncoder cost voipd 71,600 of the 94,600 instructions of serving it (encoded once to
// measure it, then again to send it).

extension AppQueryRequest: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to json: inout JSONWriter) {
        json.openObject()
        json.field("id", id)
        if let name { json.field("name", name) }
        json.closeObject()
    }

    private static let keys: [StaticString] = ["id", "name"]

    public init?(directJSON reader: inout DirectJSONReader) {
        var id: UInt64?
        var name: String??
        guard reader.object(keys: Self.keys, { key, reader in
            switch key {
            case 0: id = reader.integer(); return id != nil
            default: name = reader.optional { $0.string() }; return name != nil
            }
        }), let id else { return nil }
        self.init(id: id, name: name ?? nil)
    }
}

extension StatusResult: DirectJSONDecodable {
    private static let keys: [StaticString] = ["apps"]

    public init?(directJSON reader: inout DirectJSONReader) {
        guard let apps = reader.oneKeyObject(keys: Self.keys, { $0.array { AppStatus(directJSON: &$0) } }) else { return nil }
        self.init(apps: apps)
    }
}

extension StatusResult: DirectJSONEncodable {
    public func writeJSON(to json: inout JSONWriter) {
        json.openObject()
        json.field("apps", apps)
        json.closeObject()
    }
}

extension AppStatus: DirectJSONEncodable {
    /// In the order of its keys' names, as JSONEncoder with `.sortedKeys` writes them; nil
    /// fields left out.
    public func writeJSON(to json: inout JSONWriter) {
        json.openObject()
        if let adoption { json.field("adoption", adoption) }
        if let arguments { json.field("arguments", arguments) }
        json.field("backgroundTasks", backgroundTasks)
        json.field("connected", connected)
        if let hibernation { json.field("hibernation", hibernation) }
        if let inCallSeconds { json.field("inCallSeconds", inCallSeconds) }
        if let keepAliveMinimumSeconds { json.field("keepAliveMinimumSeconds", keepAliveMinimumSeconds) }
        if let keepAliveSeconds { json.field("keepAliveSeconds", keepAliveSeconds) }
        if let keepAliveWarning { json.field("keepAliveWarning", keepAliveWarning) }
        json.field("launchedByVoipd", launchedByVoipd)
        json.field("launches", launches)
        json.field("name", name)
        if let pid { json.field("pid", pid) }
        if let reachable { json.field("reachable", reachable) }
        if let reachableForSeconds { json.field("reachableForSeconds", reachableForSeconds) }
        json.field("reclaimedSockets", reclaimedSockets)
        if let residentBytes { json.field("residentBytes", residentBytes) }
        json.field("since", since)
        json.field("state", state.rawValue)
        if let suspension { json.field("suspension", suspension) }
        if let swappedBytes { json.field("swappedBytes", swappedBytes) }
        if let terminationReason {
            json.key("terminationReason")
            json.openObject()
            json.field("code", terminationReason.code.rawValue)
            json.field("detail", terminationReason.detail)
            json.closeObject()
        }
        json.field("uid", uid)
        json.field("voipSockets", voipSockets)
        json.field("wakes", wakes)
        json.closeObject()
    }
}

extension AdoptionStatus: DirectJSONEncodable {
    public func writeJSON(to json: inout JSONWriter) {
        json.openObject()
        if let activity { json.field("activity", activity) }
        json.field("adopted", adopted)
        json.field("ignored", ignored)
        if let lastLook { json.field("lastLook", lastLook) }
        json.field("rules", rules)
        if let warning { json.field("warning", warning) }
        json.closeObject()
    }
}

extension HibernationStatus: DirectJSONEncodable {
    public func writeJSON(to json: inout JSONWriter) {
        json.openObject()
        json.field("dirtyBytes", dirtyBytes)
        json.field("limitBytes", limitBytes)
        json.field("state", state.rawValue)
        if let swap { json.field("swap", swap) }
        json.closeObject()
    }
}

extension SocketsResult: DirectJSONDecodable {
    private static let keys: [StaticString] = ["sockets"]

    public init?(directJSON reader: inout DirectJSONReader) {
        guard let sockets = reader.oneKeyObject(keys: Self.keys, { $0.array { HeldSocketStatus(directJSON: &$0) } }) else { return nil }
        self.init(sockets: sockets)
    }
}

extension EventsResult: DirectJSONDecodable {
    private static let keys: [StaticString] = ["transitions"]

    public init?(directJSON reader: inout DirectJSONReader) {
        guard let transitions = reader.oneKeyObject(keys: Self.keys, { $0.array { TransitionRecord(directJSON: &$0) } }) else { return nil }
        self.init(transitions: transitions)
    }
}

extension TransitionRecord: DirectJSONDecodable {
    private static let keys: [StaticString] = ["time", "app", "from", "to", "reason"]

    public init?(directJSON reader: inout DirectJSONReader) {
        var time: Double?
        var app: String?, reason: String?
        var from: AppState?, to: AppState?
        guard reader.object(keys: Self.keys, { key, reader in
            switch key {
            case 0: time = reader.double(); return time != nil
            case 1: app = reader.string(); return app != nil
            case 2: from = reader.rawValue(); return from != nil
            case 3: to = reader.rawValue(); return to != nil
            default: reason = reader.string(); return reason != nil
            }
        }), let time, let app, let from, let to, let reason else { return nil }
        self.init(time: time, app: app, from: from, to: to, reason: reason)
    }
}

extension AppStatus: DirectJSONDecodable {
    private static let keys: [StaticString] = [
        "name", "pid", "state", "voipSockets", "wakes", "connected", "uid", "launchedByVoipd", "terminationReason",
        "backgroundTasks", "keepAliveSeconds", "launches", "reclaimedSockets", "residentBytes", "swappedBytes", "hibernation",
        "since", "arguments", "suspension", "inCallSeconds", "reachable", "keepAliveMinimumSeconds", "reachableForSeconds",
        "keepAliveWarning", "adoption",
    ]

    public init?(directJSON reader: inout DirectJSONReader) {
        var name: String?, state: AppState?
        var voipSockets: Int?, wakes: Int?, backgroundTasks: Int?, launches: Int?, reclaimedSockets: Int?
        var connected: Bool?, launchedByVoipd: Bool?
        var uid: UInt32?
        var since: Double?
        var pid: Int32??
        var terminationReason: TerminationReason??
        var residentBytes: UInt64??, swappedBytes: UInt64??
        var hibernation: HibernationStatus??
        var arguments: [String]??
        var suspension: String??, keepAliveWarning: String??
        var keepAliveSeconds: Double??, inCallSeconds: Double??, keepAliveMinimumSeconds: Double??, reachableForSeconds: Double??
        var reachable: Bool??
        var adoption: AdoptionStatus??
        guard reader.object(keys: Self.keys, { key, reader in
            switch key {
            case 0: name = reader.string(); return name != nil
            case 1: pid = reader.optional { $0.integer(Int32.self) }; return pid != nil
            case 2: state = reader.rawValue(); return state != nil
            case 3: voipSockets = reader.integer(); return voipSockets != nil
            case 4: wakes = reader.integer(); return wakes != nil
            case 5: connected = reader.bool(); return connected != nil
            case 6: uid = reader.integer(); return uid != nil
            case 7: launchedByVoipd = reader.bool(); return launchedByVoipd != nil
            case 8: terminationReason = reader.optional(Self.terminationReason); return terminationReason != nil
            case 9: backgroundTasks = reader.integer(); return backgroundTasks != nil
            case 10: keepAliveSeconds = reader.optional { $0.double() }; return keepAliveSeconds != nil
            case 11: launches = reader.integer(); return launches != nil
            case 12: reclaimedSockets = reader.integer(); return reclaimedSockets != nil
            case 13: residentBytes = reader.optional { $0.integer(UInt64.self) }; return residentBytes != nil
            case 14: swappedBytes = reader.optional { $0.integer(UInt64.self) }; return swappedBytes != nil
            case 15: hibernation = reader.optional(Self.hibernation); return hibernation != nil
            case 16: since = reader.double(); return since != nil
            case 17: arguments = reader.optional { $0.array { $0.string() } }; return arguments != nil
            case 18: suspension = reader.optional { $0.string() }; return suspension != nil
            case 19: inCallSeconds = reader.optional { $0.double() }; return inCallSeconds != nil
            case 20: reachable = reader.optional { $0.bool() }; return reachable != nil
            case 21: keepAliveMinimumSeconds = reader.optional { $0.double() }; return keepAliveMinimumSeconds != nil
            case 22: reachableForSeconds = reader.optional { $0.double() }; return reachableForSeconds != nil
            case 23: keepAliveWarning = reader.optional { $0.string() }; return keepAliveWarning != nil
            default: adoption = reader.optional(Self.adoption); return adoption != nil
            }
        }), let name, let state, let voipSockets, let wakes, let connected, let uid, let launchedByVoipd, let backgroundTasks,
              let launches, let reclaimedSockets, let since else { return nil }
        self.init(name: name, pid: pid ?? nil, state: state, voipSockets: voipSockets, wakes: wakes, connected: connected, uid: uid,
                  launchedByVoipd: launchedByVoipd, terminationReason: terminationReason ?? nil, backgroundTasks: backgroundTasks,
                  keepAliveSeconds: keepAliveSeconds ?? nil, launches: launches, reclaimedSockets: reclaimedSockets,
                  residentBytes: residentBytes ?? nil, since: since, arguments: arguments ?? nil, suspension: suspension ?? nil,
                  inCallSeconds: inCallSeconds ?? nil, swappedBytes: swappedBytes ?? nil, hibernation: hibernation ?? nil,
                  reachable: reachable ?? nil)
        self.keepAliveMinimumSeconds = keepAliveMinimumSeconds ?? nil
        self.reachableForSeconds = reachableForSeconds ?? nil
        self.keepAliveWarning = keepAliveWarning ?? nil
        self.adoption = adoption ?? nil
    }

    private static let terminationReasonKeys: [StaticString] = ["code", "detail"]

    private static func terminationReason(_ reader: inout DirectJSONReader) -> TerminationReason? {
        guard let (code, detail) = reader.twoKeyObject(keys: terminationReasonKeys, { $0.rawValue(TerminationReason.Code.self) },
                                                       { $0.string() }) else { return nil }
        return TerminationReason(code, detail)
    }

    private static let hibernationKeys: [StaticString] = ["state", "dirtyBytes", "limitBytes", "swap"]

    private static func hibernation(_ reader: inout DirectJSONReader) -> HibernationStatus? {
        var state: HibernationStatus.State?
        var dirtyBytes: UInt64?, limitBytes: UInt64?
        var swap: String??
        guard reader.object(keys: hibernationKeys, { key, reader in
            switch key {
            case 0: state = reader.rawValue(); return state != nil
            case 1: dirtyBytes = reader.integer(); return dirtyBytes != nil
            case 2: limitBytes = reader.integer(); return limitBytes != nil
            default: swap = reader.optional { $0.string() }; return swap != nil
            }
        }), let state, let dirtyBytes, let limitBytes else { return nil }
        return HibernationStatus(state: state, dirtyBytes: dirtyBytes, limitBytes: limitBytes, swap: swap ?? nil)
    }

    private static let adoptionKeys: [StaticString] = ["rules", "adopted", "ignored", "lastLook", "warning", "activity"]

    private static func adoption(_ reader: inout DirectJSONReader) -> AdoptionStatus? {
        var rules: [String]?, adopted: [String]?
        var ignored: Int?
        var lastLook: Double??
        var warning: String??, activity: String??
        guard reader.object(keys: adoptionKeys, { key, reader in
            switch key {
            case 0: rules = reader.array { $0.string() }; return rules != nil
            case 1: adopted = reader.array { $0.string() }; return adopted != nil
            case 2: ignored = reader.integer(); return ignored != nil
            case 3: lastLook = reader.optional { $0.double() }; return lastLook != nil
            case 4: warning = reader.optional { $0.string() }; return warning != nil
            default: activity = reader.optional { $0.string() }; return activity != nil
            }
        }), let rules, let adopted, let ignored else { return nil }
        return AdoptionStatus(rules: rules, adopted: adopted, ignored: ignored, lastLook: lastLook ?? nil, warning: warning ?? nil,
                              activity: activity ?? nil)
    }
}
