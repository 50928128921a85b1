/// Where the daemon's control socket is: `--socket PATH`, else `$VOIPD_SOCKET`, else
/// `$XDG_RUNTIME_DIR/voipd.sock` for a user, else `/run/voipd/voipd.sock` for root.
/// The daemon and every client resolve it the same way.
public enum ControlSocketPath {
    public static let rootDefault = "/run/voipd/voipd.sock"

    public static func resolve(explicit: String?, environment: [String: String], isRoot: Bool) -> String? {
        resolve(explicit: explicit, variable: { environment[$0] }, isRoot: isRoot)
    }

    /// The same, with the environment's variables looked up one by one (`getenv`): a client
    /// that makes a dictionary of its whole environment for two variables spends a tenth of
    /// a `voipctl status` on it.
    public static func resolve(explicit: String?, variable: (String) -> String?, isRoot: Bool) -> String? {
        if let explicit, !explicit.isEmpty { return explicit }
        if let path = variable("VOIPD_SOCKET"), !path.isEmpty { return path }
        if isRoot { return rootDefault }
        if let runtime = variable("XDG_RUNTIME_DIR"), !runtime.isEmpty { return runtime + "/voipd.sock" }
        return nil
    }

    /// The error message when nothing names a path.
    public static let unresolvedMessage = "no control socket path: pass --socket PATH, or set VOIPD_SOCKET or XDG_RUNTIME_DIR"
}

/// Environment variables voipd sets for the programs it launches.
public enum LaunchEnvironment {
    /// The control socket's path.
    public static let socket = "VOIPD_SOCKET"
    /// The name the app was launched under; the client library identifies itself with it.
    public static let appName = "VOIPD_APP_NAME"
}
