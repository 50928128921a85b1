/// What a test tells the test app (`voip-test-app`), one JSON object a line on the report
/// socket. Each command is answered by a ``TestAppReport`` (or ``TestAppReport/error(message:)``).
public enum TestAppCommand: Codable, Equatable, Sendable {
    /// Connects to `address` ("tcp:HOST:PORT" or "unix:PATH") and registers the connection
    /// with voipd as VoIP socket `socket`.
    case register(socket: String, address: String)
    /// Connects an ordinary socket (one reclaim may take) to `address`.
    case connect(socket: String, address: String)
    /// Listens on a TCP port of the loopback address.
    case listen(socket: String)
    /// Registers with voipd, as VoIP socket `socket`, a TCP listener (`transport` "tcp") or a
    /// bound, unconnected UDP socket ("udp") on a port of the loopback address; answered by
    /// `listening`. An accepted connection is registered as VoIP socket `SOCKET-in-N` and read
    /// (echoed with `--echo`) until its peer closes it, then unregistered; a datagram is
    /// echoed to its sender.
    case registerServing(socket: String, transport: String)
    case unregister(socket: String)
    /// Asks voipd for a copy of a held socket, and says whether it is the app's own.
    case retrieve(socket: String)
    /// Closes the app's own descriptor of a socket (voipd's stays).
    case closeOwn(socket: String)
    /// Reads what is waiting, without blocking.
    case read(socket: String)
    case write(socket: String, data: String)
    /// Accepts one connection on a listening socket, and closes it.
    case accept(socket: String)
    case beginTask(name: String)
    case endTask(id: UInt64)
    case keepAlive(seconds: Double)
    /// A call begins (true) or ends (false): the app's audio session.
    case audioSession(active: Bool)
    /// Acknowledges an event that the app was told not to acknowledge itself (`--no-ack`).
    case acknowledge(eventID: UInt64)
    /// Holds this many more megabytes of memory, touched so that it is resident.
    case allocate(megabytes: Int)
    /// Maps this many megabytes of anonymous memory (in place of any it filled before) and
    /// writes ``MemoryPattern`` with `seed` over it; answered by `memoryFilled`.
    case fillMemory(megabytes: Int, seed: UInt64)
    /// Reads all the memory it filled and reports the checksum (`memoryChecksum`).
    case checksumMemory
    /// Opens the background session `session`, discretionary or not, with its tasks'
    /// `timeoutIntervalForResource` in seconds if given (answered by `sessionOpened`).
    case openSession(session: String, discretionary: Bool?, resourceTimeout: Double? = nil)
    /// From now on, each completion in `session` creates the next download of `url`, into
    /// `directory`/chain-N, until `count` have been created: an app chaining tasks one by one.
    case chain(session: String, url: String, directory: String, count: Int)
    /// A download of `url` into `path` in the session (answered by `transferCreated`).
    case download(session: String, url: String, path: String)
    /// An upload of the file `path` to `url` with PUT (answered by `transferCreated`).
    case upload(session: String, url: String, path: String)
    /// The credential the app answers challenges with from now on (nil: take the 401).
    case credential(user: String?, password: String?)
    case exit(code: Int32)
    /// `abort()`.
    case crash
}
