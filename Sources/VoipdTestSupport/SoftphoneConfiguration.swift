import VoipdSystem

/// The softphones' configurations of Deploy/softphones, filled in as the adoption tests,
/// `voipd-bench` and the demo run baresip and linphonec.
public enum SoftphoneConfiguration {
    public static let directory = packageDirectory + "/Deploy/softphones"

    /// The file `name` of ``directory`` with each `@KEY@` replaced by its value.
    public static func text(_ name: String, _ values: [String: String]) throws -> String {
        let path = directory + "/" + name
        guard var text = ProcFS.read(path) else { throw TestFailure("\(path) is missing") }
        for (key, value) in values { text = text.replacing("@\(key)@", with: value) }
        return text
    }

    /// baresip's `config`: SIP on `address`:`sipPort` (UDP and TCP; TLS, baresip's choice, on
    /// `sipPort` + 1), audio in memory (aubridge), with the lines `modules` added.
    public static func baresip(address: String, sipPort: UInt16, modules: String = "") throws -> String {
        try text("baresip.config", ["ADDRESS": address, "SIP_PORT": "\(sipPort)", "MODULES": modules])
    }

    /// baresip's `accounts`: `user` registering at `registrar` (HOST:PORT) over `transport`
    /// every `regint` seconds, answering calls by itself.
    public static func baresipAccount(user: String, registrar: String, transport: String = "tcp", regint: Int = 600,
                                      parameters: String = "") -> String {
        "<sip:\(user)@\(registrar);transport=\(transport)>;regint=\(regint);answermode=auto\(parameters)\n"
    }

    /// linphonec's `linphonerc`: SIP on UDP `sipPort`, `user` registered at 127.0.0.1:`registrarPort`.
    public static func linphonerc(sipPort: UInt16, registrarPort: UInt16, user: String) throws -> String {
        try text("linphonerc", ["SIP_PORT": "\(sipPort)", "REGISTRAR_PORT": "\(registrarPort)", "USER": user])
    }
}

extension SoftphoneConfiguration {
    /// The manifest from which voipd launches baresip (`binary -f home`, its output appended
    /// to `log`) and adopts it: `sip` for its own SIP port (UDP and TCP) and
    /// `sip:port=REGISTRARPORT` for its REGISTER connection, quiet once a window of
    /// `quietWindowSeconds` passes below the thresholds.
    public static func adoptedBaresipManifest(binary: String, home: String, log: String, registrarPort: UInt16,
                                              quietWindowSeconds: Double) -> String {
        let arguments = ["-c", #"exec "$@" >>\#(log) 2>&1"#, "sh", binary, "-f", home]
        let quoted = arguments.map { "\"" + $0.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\"" }
        return #"{"command": "/bin/sh", "arguments": [\#(quoted.joined(separator: ", "))], "adopt": ["sip", "sip:port=\#(registrarPort)"], "#
            + #""quietWindowSeconds": \#(quietWindowSeconds)}"# + "\n"
    }
}
