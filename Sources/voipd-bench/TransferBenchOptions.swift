/// The options of `voipd-bench transfer`.
struct TransferBenchOptions: SubcommandOptions {
    var megabytes = 1024
    var runs = 3
    var json = false
    var agent: String?
    var curl = "/usr/bin/curl"
    var nginx = "/usr/sbin/nginx"
    /// Where the downloads are written (the same file system for both).
    var directory: String?

    static let usage = """
    usage: voipd-bench transfer [--size MB] [--runs N] [--json] [--agent PATH] [--curl PATH]
                                [--nginx PATH] [--directory DIR]

    One file downloaded from nginx on loopback by curl and by the transfer service (its
    engine and store here, the voipd-transfer agent doing the HTTP), alternately, the same
    URL into the same directory; throughput of each, the agent's against curl's (target:
    at least 90 %), and the CPU each spends per gigabyte: the agent, the service around it,
    curl. The agent flushes a finished download before renaming it into place, so curl's
    figures are given as is and with the same flush (curl + fdatasync).

      --size MB          the file's size in MiB (default 1024)
      --runs N           downloads by each (default 3); medians are reported
      --json             one JSON object on standard output
      --agent PATH       voipd-transfer (default: next to this executable)
      --curl PATH        curl (default /usr/bin/curl)
      --nginx PATH       nginx (default /usr/sbin/nginx)
      --directory DIR    where the files go (default: a new directory under /tmp)
    """

    mutating func read(_ flag: String, from reader: inout OptionReader) throws {
        switch flag {
        case "--size": megabytes = try reader.integer(flag, in: 1...65536)
        case "--runs": runs = try reader.integer(flag, in: 1...100)
        case "--json": json = true
        case "--agent": agent = try reader.value(flag)
        case "--curl": curl = try reader.value(flag)
        case "--nginx": nginx = try reader.value(flag)
        case "--directory": directory = try reader.value(flag)
        default: throw OptionReader.unknown(flag)
        }
    }
}
