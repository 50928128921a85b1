import Glibc
import VoipdVocabulary

/// How much one discovery may cost. A hostile program can open 100,000 sockets and fork as
/// many processes as its limits allow; past each bound the discovery stops looking, says so
/// in ``SocketDiscovery/limitsReached``, and works with what it saw (the lowest descriptor
/// numbers of the first processes, which a program opens first: its SIP sockets are made at
/// start). At the defaults a discovery reads at most 16,384 descriptor links and a few
/// tables, a few milliseconds of voipd's time.
public struct SocketDiscoveryLimits: Sendable, Equatable {
    /// Processes of the tree looked at.
    public var processes: Int
    /// Descriptors looked at, over all the processes.
    public var descriptors: Int
    /// Distinct sockets kept.
    public var sockets: Int
    /// Records read from one kernel table (the whole network namespace's sockets of one
    /// family and transport, not only the program's).
    public var tableEntries: Int

    public init(processes: Int = 256, descriptors: Int = 16_384, sockets: Int = 4_096, tableEntries: Int = 1 << 20) {
        self.processes = processes
        self.descriptors = descriptors
        self.sockets = sockets
        self.tableEntries = tableEntries
    }
}

/// A TCP or UDP socket of a program, and where it can be taken from.
public struct DiscoveredSocket: Sendable, Equatable, CustomStringConvertible {
    public var socket: NetworkSocket
    /// The descriptors that refer to it (a socket inherited by a child is in both), the
    /// first found first.
    public var holders: [DescriptorLocation]

    public init(socket: NetworkSocket, holders: [DescriptorLocation]) {
        self.socket = socket
        self.holders = holders
    }

    public var description: String { "\(socket) at \(holders.map(\.description).joined(separator: ", "))" }
}

/// A program's TCP and UDP sockets: its process tree's socket descriptors (/proc/PID/fd),
/// each described from a copy of it (``NetworkSocket/describing(_:transport:inode:)``) or
/// matched by inode with the kernel's socket tables (``SocketDiagnostics``, or
/// ``ProcNetSocketTable`` where netlink cannot answer).
public struct SocketDiscovery: Sendable {
    /// How the sockets found in the descriptors are described.
    public enum Method: Sendable, Equatable {
        /// Each from a copy of its descriptor (`pidfd_getfd`, closed at once): a few system
        /// calls a socket, whatever else the machine holds. Where a copy cannot be taken
        /// (no ptrace access: `EPERM`), from the tables by netlink. A copy is what passing
        /// the descriptor over a Unix socket gives: it sets the socket's cgroup v1
        /// `net_cls`/`net_prio` marks to voipd's, as holding an adopted socket does anyway.
        case descriptors
        /// From the kernel's tables by `NETLINK_SOCK_DIAG`, /proc/PID/net where it cannot
        /// answer: a dump of a TCP table walks the machine's whole connection hash.
        case netlink
        /// From /proc/PID/net only (to compare, or where a filter breaks netlink in ways it
        /// does not report).
        case procNet
    }

    public enum Limit: Sendable, Equatable, CustomStringConvertible {
        case processes(Int), descriptors(Int), sockets(Int), tableEntries(Int)

        public var description: String {
            switch self {
            case .processes(let n): return "more than \(n) processes: the others were not looked at"
            case .descriptors(let n): return "more than \(n) descriptors: higher descriptors were not looked at"
            case .sockets(let n): return "more than \(n) sockets: the others were not looked at"
            case .tableEntries(let n): return "a socket table of more than \(n) entries was read only in part"
            }
        }
    }

    /// Where the sockets were described: from copies of their descriptors, or the kernel's
    /// tables of one network namespace.
    public enum TableSource: Sendable, Equatable, CustomStringConvertible {
        /// Copies of the descriptors (``Method/descriptors``): no table read.
        case descriptors
        case netlink
        /// /proc/PID/net, because netlink could not answer (the errno says why).
        case procNet(pid: pid_t, because: Errno)

        public var description: String {
            switch self {
            case .descriptors: return "the descriptors"
            case .netlink: return "NETLINK_SOCK_DIAG"
            case .procNet(let pid, let error): return "/proc/\(pid)/net (\(error))"
            }
        }
    }

    public var tree: ProcessTree
    /// The TCP and UDP sockets, in the order of their first descriptor.
    public var sockets: [DiscoveredSocket]
    /// Socket descriptors that are not TCP or UDP (Unix, netlink, raw…), TCP or UDP sockets
    /// that are in no table (neither bound nor connected yet), and those of a transport not
    /// asked for.
    public var otherSockets: Int
    /// The other sockets by the kernel's name of their protocol (`UNIX-STREAM`, `NETLINK`,
    /// `TCP`…; `unknown` when it could not be read).
    public var otherProtocols: [String: Int]
    public var descriptorsExamined: Int
    /// Processes whose descriptors could not be read, and why (not those that exited meanwhile).
    public var unreadable: [(pid: pid_t, error: Errno)]
    public var limitsReached: [Limit]
    public var tableSources: [TableSource]

    /// The sockets of `root` and its descendants (or of the processes of `cgroup`, a
    /// cgroup's directory, when given), for the transports asked. Throws `ESRCH` when the
    /// root is gone, or the errno of reading the cgroup; problems with single processes and
    /// tables are reported in the result instead.
    public static func discover(root: pid_t, cgroup: String? = nil, transports: Set<NetworkSocket.Transport> = [.tcp, .udp],
                                limits: SocketDiscoveryLimits = SocketDiscoveryLimits(), method: Method = .netlink) throws -> SocketDiscovery {
        let tree = try cgroup.map { try ProcessTree.inCgroup($0, limit: limits.processes) } ?? ProcessTree.below(root, limit: limits.processes)
        var discovery = SocketDiscovery(tree: tree, sockets: [], otherSockets: 0, otherProtocols: [:], descriptorsExamined: 0, unreadable: [],
                                        limitsReached: tree.truncated ? [.processes(limits.processes)] : [], tableSources: [])
        // Inode → holders and protocol, and by network namespace (a diagnostics socket sees
        // only its own) the inodes each table may hold.
        var holders: [UInt64: [DescriptorLocation]] = [:]
        var protocols: [UInt64: String] = [:]
        var order: [UInt64] = []
        var namespaces: [NamespaceKey: (pid: pid_t, wanted: [InetTable: Set<UInt64>])] = [:]
        var namespaceOrder: [NamespaceKey] = []
        // Described from copies: found, or in no table (`nil`).
        var described: [UInt64: NetworkSocket?] = [:]
        scanning: for pid in tree.processes {
            let scan: SocketDescriptorScan.Result
            do {
                scan = try SocketDescriptorScan.scan(pid, limit: limits.descriptors - discovery.descriptorsExamined)
            } catch let error as Errno {
                if error != .noSuchFileOrDirectory { discovery.unreadable.append((pid, error)) }
                continue
            }
            discovery.descriptorsExamined += scan.examined
            if method == .descriptors { describeFromCopies(scan.sockets, of: pid, transports: transports, into: &described) }
            // A process that exited since its descriptors were read has no namespace left:
            // its sockets not described already are not looked for.
            let namespace = scan.sockets.contains { described[$0.inode] == nil } ? NamespaceKey(pid: pid) : nil
            for entry in scan.sockets {
                let undescribed = described[entry.inode] == nil
                if undescribed, namespace == nil { continue }
                if holders[entry.inode] == nil {
                    guard order.count < limits.sockets else {
                        discovery.limitsReached.append(.sockets(limits.sockets))
                        break scanning
                    }
                    order.append(entry.inode)
                    protocols[entry.inode] = entry.protocolName ?? "unknown"
                }
                holders[entry.inode, default: []].append(entry.location)
                guard undescribed, let namespace else { continue }
                for table in InetTable.tables(holding: entry.protocolName) where transports.contains(table.transport) {
                    if namespaces[namespace] == nil { namespaceOrder.append(namespace) }
                    namespaces[namespace, default: (pid, [:])].wanted[table, default: []].insert(entry.inode)
                }
            }
            if scan.truncated {
                discovery.limitsReached.append(.descriptors(limits.descriptors))
                break
            }
        }
        var found: [UInt64: NetworkSocket] = [:]
        for case (let inode, let socket?) in described { found[inode] = socket }
        if !described.isEmpty { discovery.tableSources.append(.descriptors) }
        for key in namespaceOrder {
            guard let (pid, wanted) = namespaces[key] else { continue }
            let (source, tableLimit) = readTables(of: pid, own: key == NamespaceKey(pid: getpid()), wanted: wanted,
                                                  limit: limits.tableEntries, netlink: method != .procNet, into: &found)
            discovery.tableSources.append(source)
            if tableLimit, !discovery.limitsReached.contains(.tableEntries(limits.tableEntries)) {
                discovery.limitsReached.append(.tableEntries(limits.tableEntries))
            }
        }
        for inode in order {
            if let socket = found[inode] {
                discovery.sockets.append(DiscoveredSocket(socket: socket, holders: holders[inode] ?? []))
            } else {
                discovery.otherSockets += 1
                discovery.otherProtocols[protocols[inode] ?? "unknown", default: 0] += 1
            }
        }
        return discovery
    }

    /// Describes the TCP and UDP sockets of one process's scan from copies of its
    /// descriptors, each checked to be the socket scanned (a descriptor number reused since
    /// holds another inode). What cannot be copied or described is left for the tables.
    private static func describeFromCopies(_ entries: [SocketDescriptorScan.Entry], of pid: pid_t, transports: Set<NetworkSocket.Transport>,
                                           into described: inout [UInt64: NetworkSocket?]) {
        let wanted = entries.filter { entry in
            described[entry.inode] == nil && InetTable.transport(of: entry.protocolName).map(transports.contains) == true
        }
        guard !wanted.isEmpty, let process = try? PidFd(pid: pid) else { return }
        for entry in wanted where described[entry.inode] == nil {
            guard let transport = InetTable.transport(of: entry.protocolName),
                  let copy = try? process.duplicateDescriptor(entry.location.descriptor),
                  (try? Socket.inode(of: copy)) == entry.inode else { continue }
            do {
                described[entry.inode] = .some(try NetworkSocket.describing(copy, transport: transport, inode: entry.inode))
            } catch {
                // Left for the tables.
            }
        }
    }

    /// Reads the tables of `pid`'s network namespace that may hold wanted sockets, each
    /// until all of its wanted sockets are found. Netlink first (in voipd's namespace, or
    /// entered from a thread); /proc/PID/net for a table netlink refuses. Returns the source
    /// and whether a table was cut at the limit.
    private static func readTables(of pid: pid_t, own: Bool, wanted: [InetTable: Set<UInt64>], limit: Int, netlink: Bool,
                                   into found: inout [UInt64: NetworkSocket]) -> (TableSource, Bool) {
        var source = netlink ? TableSource.netlink : .procNet(pid: pid, because: Errno(EPERM, call: "netlink not wanted"))
        var cut = false
        // One diagnostics socket for the namespace: entering another namespace costs a thread.
        var socket: SocketDiagnostics?
        func diagnostics() throws -> SocketDiagnostics {
            if let socket { return socket }
            if own {
                socket = try SocketDiagnostics()
            } else {
                let namespace = try openFile("/proc/\(pid)/ns/net", flags: O_RDONLY)
                socket = try SocketDiagnostics(inNetworkNamespace: namespace)
            }
            return socket!
        }
        for table in InetTable.allCases {
            // A socket whose protocol could not be read is wanted from every table until found.
            var missing = (wanted[table] ?? []).filter { found[$0] == nil }
            if missing.isEmpty { continue }
            // Keeps the program's sockets; true while some are still missing.
            func collect(_ socket: NetworkSocket) -> Bool {
                if missing.remove(socket.inode) != nil { found[socket.inode] = socket }
                return !missing.isEmpty
            }
            if case .netlink = source {
                do {
                    try diagnostics().dump(family: table.family, transport: table.transport,
                                           states: table.transport == .tcp ? InetDiagMessages.tcpStatesWithOwners : UInt32.max,
                                           limit: limit) { batch in batch.allSatisfy(collect) }
                    continue
                } catch Errno.overflow {
                    // The dump was left unread: the next one needs a new socket.
                    socket = nil
                    cut = true
                    continue
                } catch let error as Errno {
                    // No inet_diag/udp_diag, or no right to enter the namespace: from now on
                    // this namespace's tables come from /proc.
                    source = .procNet(pid: pid, because: error)
                } catch {
                    source = .procNet(pid: pid, because: Errno(EIO, call: "\(error)"))
                }
            }
            do {
                try ProcNetSocketTable.find(missing, pid: pid, transport: table.transport, family: table.family == AF_INET ? .ipv4 : .ipv6,
                                            limit: limit, into: &found)
            } catch Errno.overflow {
                cut = true
            } catch {
                // The process exited, or the table could not be read: its sockets stay
                // unidentified and are counted among the others.
            }
        }
        return (source, cut)
    }

    /// The kernel's four tables of TCP and UDP sockets.
    private enum InetTable: CaseIterable {
        case tcp4, tcp6, udp4, udp6

        var transport: NetworkSocket.Transport { self == .tcp4 || self == .tcp6 ? .tcp : .udp }
        var family: CInt { self == .tcp4 || self == .udp4 ? AF_INET : AF_INET6 }

        /// The transport of a socket of this protocol (`system.sockprotoname`); nil for any
        /// other protocol and an unknown one.
        static func transport(of protocolName: String?) -> NetworkSocket.Transport? {
            switch protocolName {
            case "TCP", "TCPv6": return .tcp
            case "UDP", "UDPv6": return .udp
            default: return nil
            }
        }

        /// The tables a socket of this protocol can be in (`system.sockprotoname`): one for
        /// TCP and UDP, none for any other protocol, all when the name is unknown.
        static func tables(holding protocolName: String?) -> [InetTable] {
            switch protocolName {
            case "TCP": return [.tcp4]
            case "TCPv6": return [.tcp6]
            case "UDP": return [.udp4]
            case "UDPv6": return [.udp6]
            case nil: return allCases
            default: return []
            }
        }
    }

    /// A network namespace's identity: the device and inode of /proc/PID/ns/net.
    private struct NamespaceKey: Hashable {
        let device: UInt64
        let inode: UInt64

        init?(pid: pid_t) {
            var info = stat()
            guard stat("/proc/\(pid)/ns/net", &info) == 0 else { return nil }
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
        }
    }
}
