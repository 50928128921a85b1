import Glibc
import VoipdSystem

/// How voipd starts a transfer agent for an app: the program, its environment, and the
/// account it runs as. One agent serves every app of one account, and runs as that account,
/// so that a root voipd never reads or writes a file the app's user could not.
public struct TransferAgentLauncher {
    /// `voipd-transfer`; by default ``defaultExecutable``.
    public var executable: String
    /// The agent's environment: voipd's PATH, locale, time zone, proxy and CA settings, no
    /// more (libcurl reads the proxy and CA variables).
    public var environment: [String]
    /// The account of an app's agent; nil runs it as voipd itself (a voipd that is not root
    /// can start nothing else). Throws when the app has no account voipd may use.
    public var credentials: (String) throws -> SpawnCredentials?
    /// Where the agent's diagnostics go (nil: voipd's standard error).
    public var standardError: CInt?

    public init(executable: String = TransferAgentLauncher.defaultExecutable,
                environment: [String] = TransferAgentLauncher.defaultEnvironment(),
                credentials: @escaping (String) throws -> SpawnCredentials? = { _ in nil },
                standardError: CInt? = nil) {
        self.executable = executable
        self.environment = environment
        self.credentials = credentials
        self.standardError = standardError
    }

    /// The agent beside the running executable (a build's directory), else where a package
    /// installs it for `<prefix>/bin/voipd`: `<prefix>/libexec/voipd/voipd-transfer`
    /// (Deploy/install.sh).
    public static var defaultExecutable: String {
        guard let path = currentExecutablePath() else { return "voipd-transfer" }
        return agentExecutable(forProgram: path) { access($0, X_OK) == 0 }
    }

    /// Where the agent of the program at `program` is, `isExecutable` saying which exists.
    public static func agentExecutable(forProgram program: String, isExecutable: (String) -> Bool) -> String {
        guard let slash = program.lastIndex(of: "/") else { return "voipd-transfer" }
        let directory = String(program[..<slash])
        let beside = directory + "/voipd-transfer"
        if isExecutable(beside) { return beside }
        let prefix = directory.lastIndex(of: "/").map { String(directory[..<$0]) } ?? ""
        let installed = prefix + "/libexec/voipd/voipd-transfer"
        return isExecutable(installed) ? installed : beside
    }

    public static func defaultEnvironment() -> [String] {
        let passed = ["PATH=", "LANG=", "LANGUAGE=", "LC_", "TZ=", "http_proxy=", "https_proxy=", "no_proxy=", "all_proxy=",
                      "HTTP_PROXY=", "HTTPS_PROXY=", "NO_PROXY=", "ALL_PROXY=", "SSL_CERT_FILE=", "SSL_CERT_DIR=", "CURL_CA_BUNDLE="]
        return currentEnvironment().filter { entry in passed.contains { entry.hasPrefix($0) } }
    }

    /// The request that starts an agent with `socket` as its descriptor 3. One malloc arena
    /// (`MALLOC_ARENA_MAX=1`): URLSession allocates each 16 KiB chunk on one dispatch thread
    /// and the agent frees it on another, and arenas per thread keep what they got back.
    func spawnRequest(socket: CInt, credentials: SpawnCredentials?) -> SpawnRequest {
        SpawnRequest(arguments: [executable], environment: environment + ["MALLOC_ARENA_MAX=1"], workingDirectory: "/",
                     standardError: standardError, extraDescriptors: [socket], credentials: credentials,
                     umask: 0o077, noNewPrivileges: true)
    }
}
