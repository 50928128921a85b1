import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport

/// The readings hibernation decides by: a process's memory, a cgroup's, the swap areas,
/// the mappings, a socket's receive queue. Each from the kernel's own text (as this kernel
/// and older ones write it) and from a real process or socket.
@Suite("Memory and queue readings")
struct MemoryReadingTests {
    @Test("smaps_rollup: resident, private dirty, anonymous against file-backed, swapped")
    func smapsRollup() {
        let memory = ProcessMemory.parse("""
            556796125000-7ffe925db000 ---p 00000000 00:00 0                          [rollup]
            Rss:                1768 kB
            Pss:                 163 kB
            Pss_Dirty:           116 kB
            Shared_Clean:       1652 kB
            Shared_Dirty:          0 kB
            Private_Clean:         4 kB
            Private_Dirty:       116 kB
            Anonymous:           116 kB
            Swap:                 20 kB
            Locked:                8 kB
            """)
        #expect(memory == ProcessMemory(resident: 1768 << 10, proportional: 163 << 10, privateDirty: 116 << 10, privateClean: 4 << 10,
                                        sharedDirty: 0, sharedClean: 1652 << 10, anonymous: 116 << 10, swapped: 20 << 10, locked: 8 << 10))
        #expect(memory.fileBacked == (1768 - 116) << 10)
        #expect(memory.dirty == (116 + 20) << 10)
    }

    @Test("a running process's memory, alone and summed with a process that has ended")
    func ownMemory() throws {
        let memory = try ProcessMemory.of(getpid())
        let counters = try MemoryCounters.of(getpid())
        #expect(memory.resident > 0 && memory.privateDirty > 0 && memory.anonymous > 0)
        #expect(counters.resident > 0 && counters.residentAnonymous > 0 && counters.residentFile > 0)
        #expect(counters.resident == counters.residentAnonymous + counters.residentFile + counters.residentShared)
        let ended = try TestProcess(["/bin/true"])
        _ = try ended.waitForExit(.seconds(20))
        #expect(throws: Errno(ENOENT)) { try ProcessMemory.of(ended.pid) }
        let both = try ProcessMemory.of(processes: [getpid(), ended.pid])
        #expect(both.resident > 0 && both.privateDirty > 0)
    }

    @Test("memory.stat of cgroup v2 and of v1's memory controller")
    func cgroupStat() {
        let unified = CgroupMemory.parse(stat: """
            anon 10485760
            file 4096000
            kernel 1000
            shmem 8192
            file_dirty 4096
            anon_thp 0
            """, swapCurrent: 2048)
        #expect(unified == CgroupMemory(hierarchy: .unified, anonymous: 10_485_760, file: 4_096_000, fileDirty: 4096, shared: 8192,
                                        swapped: 2048))
        // Typed: with bare literals the comparison compiled as AnyHashable's ==, whose thunk
        // read the UInt64? from an 8-byte slot (AddressSanitizer: stack-buffer-overflow).
        #expect(unified?.dirty == UInt64(10_485_760 + 8192 + 4096 + 2048))
        let controller = CgroupMemory.parse(stat: """
            cache 11542528
            rss 13647872
            shmem 9068544
            dirty 36864
            swap 0
            total_cache 2778468352
            total_rss 1288540160
            total_shmem 11907072
            total_dirty 110567424
            total_swap 4096
            """)
        #expect(controller == CgroupMemory(hierarchy: .memoryController, anonymous: 1_288_540_160, file: 2_778_468_352,
                                           fileDirty: 110_567_424, shared: 11_907_072, swapped: 4096))
        #expect(CgroupMemory.parse(stat: "frozen 1\n") == nil)
    }

    @Test("the memory cgroup an app is moved into counts the anonymous memory it then fills",
          .enabled(if: (isRoot && ownMemoryCgroup() != nil) || runningUnderCI,
                   "needs root and a memory cgroup (with CI=true their absence is a failure)"))
    func cgroupOfApp() throws {
        let parent = try #require(ownMemoryCgroup(), "no memory cgroup of this process under /sys/fs/cgroup")
        let directory = parent + "/voipd-hibernate-\(getpid())"
        #expect(mkdir(directory, 0o755) == 0, "mkdir \(directory): \(Errno.current())")
        defer { rmdir(directory) }
        let app = try StandaloneTestApp(name: "cgroup-memory")
        defer { app.stop() }
        let procs = try openFile(directory + "/cgroup.procs", flags: O_WRONLY)
        try procs.writeAll(Array("\(app.pid)\n".utf8))
        try app.handle.send(.fillMemory(megabytes: 20, seed: 5))
        try app.handle.expect(\.filledMemory, timeout: .seconds(120))
        let memory = try CgroupMemory.read(directory: directory)
        #expect(memory.anonymous >= 20 << 20, "\(memory)")
        #expect(memory.dirty >= 20 << 20)
    }

    @Test("/proc/swaps: files and partitions, zram, a path with a space")
    func swaps() {
        let areas = SwapSpace.parse(swaps: """
            Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority
            /dev/zram0                              partition\t524284\t\t1024\t\t100
            /var/swap\\040file                       file\t\t65532\t\t0\t\t-2
            """)
        #expect(areas == [SwapArea(path: "/dev/zram0", kind: .partition, size: 524_284 << 10, used: 1024 << 10, priority: 100),
                          SwapArea(path: "/var/swap file", kind: .file, size: 65532 << 10, used: 0, priority: -2)])
        #expect(areas.map(\.zramDevice) == ["zram0", nil])
        let space = SwapSpace(areas: areas, zswapEnabled: false)
        #expect(space.isAvailable && space.free == (524_284 - 1024 + 65532) << 10)
        #expect(!SwapSpace(areas: [], zswapEnabled: true).isAvailable)
    }

    @Test("/proc/PID/maps: anonymous, file-backed with spaces, the kernel's own, guard regions")
    func maps() throws {
        let regions = MemoryMap.parse("""
            55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                          [heap]
            7f0000000000-7f0000001000 r-xp 00002000 fe:00 333151                     /opt/my app/lib (deleted)
            7f0000001000-7f0000002000 ---p 00000000 00:00 0
            7f0000002000-7f0000003000 rw-s 00000000 00:01 42                         /memfd:pool (deleted)
            7ffd1000000-7ffd1002000 r--p 00000000 00:00 0                          [vvar]
            ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
            not a line
            """)
        #expect(regions.map(\.path) == ["[heap]", "/opt/my app/lib (deleted)", "", "/memfd:pool (deleted)", "[vvar]", "[vsyscall]"])
        #expect(regions.map(\.isAnonymous) == [true, false, true, false, false, false])
        #expect(regions.map(\.mayHavePages) == [true, true, false, true, false, false])
        #expect(regions[1].isExecutable && !regions[1].isWritable && regions[3].isShared && regions[1].size == 4096)
        let own = try MemoryMap.regions(of: getpid())
        #expect(own.contains { $0.path == "[stack]" } && own.contains { $0.inode != 0 })
    }

    @Test("a stopped app's socket keeps what arrives, measured through a duplicate; on resume the app reads all of it")
    func receiveQueueOfStoppedApp() throws {
        let app = try StandaloneTestApp(name: "receive-queue")
        defer { app.stop() }
        let peer = try TCPPeer()
        try app.handle.send(.connect(socket: "presence", address: peer.address))
        let connection = try peer.accept()
        try app.handle.expect(.connected(socket: "presence"))
        try app.process.pidfd.stopChild()
        let payload = String(repeating: "presence;", count: 4000)
        try connection.write(payload)
        let peerPort = try remotePort(connection.descriptor)
        // The app's descriptor of the connection: the one whose local port the peer sees.
        var queue: ReceiveQueue?
        for target in ProcFS.descriptors(of: app.pid) {
            let copy = try app.process.pidfd.duplicateDescriptor(target)
            guard try Socket.kind(of: copy)?.isNetwork == true, try Socket.localPort(copy) == peerPort else { continue }
            #expect(waitReadable(copy.rawValue, Deadline(.seconds(20))))
            queue = try Socket.receiveQueue(of: copy)
        }
        let measured = try #require(queue, "no descriptor of the app is the connection")
        #expect(measured.unreadBytes == payload.utf8.count, "\(measured)")
        #expect(measured.chargedBytes >= payload.utf8.count && measured.bufferSize > measured.chargedBytes, "\(measured)")
        try app.process.pidfd.send(SIGCONT)
        var received = ""
        while received.utf8.count < payload.utf8.count {
            try app.handle.send(.read(socket: "presence"))
            let outcome = try app.handle.expectRead("presence")
            received += try #require(outcome.data, "\(outcome)")
        }
        #expect(received == payload, "the first fate: the kernel kept it all")
    }

    @Test("a datagram socket's queue: the first datagram's size unread, every datagram charged; a listener has no queue")
    func datagramQueue() throws {
        let receiver = try Socket.make(domain: AF_INET, type: Socket.datagramType)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                _ = try valueOrErrno("bind") { bind(receiver.rawValue, raw, length) }
                _ = try valueOrErrno("getsockname") { getsockname(receiver.rawValue, raw, &length) }
            }
        }
        let sender = try Socket.make(domain: AF_INET, type: Socket.datagramType)
        for size in [100, 200, 300] {
            let bytes = [UInt8](repeating: 7, count: size)
            let sent = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(sender.rawValue, bytes, size, 0, $0, length) }
            }
            #expect(sent == size)
        }
        #expect(waitReadable(receiver.rawValue, Deadline(.seconds(20))))
        let queue = try Socket.receiveQueue(of: receiver)
        #expect(queue.unreadBytes == 100, "\(queue)")
        #expect(queue.chargedBytes >= 600 && queue.drops == 0, "\(queue)")
        let listener = try Socket.listenTCP()
        #expect(throws: Errno(EINVAL)) { try Socket.receiveQueue(of: listener) }
    }

    /// The port at the far end of a TCP connection (`getpeername`).
    private func remotePort(_ socket: borrowing FileDescriptor) throws -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                try valueOrErrno("getpeername") { getpeername(socket.rawValue, raw, &length) }
            }
        }
        return UInt16(bigEndian: address.sin_port)
    }
}

/// The directory of this process's memory cgroup, if it is a writable one: v1's memory
/// hierarchy (`/sys/fs/cgroup/memory`) or v2's unified one with the memory controller.
func ownMemoryCgroup() -> String? {
    guard let text = ProcFS.read("/proc/self/cgroup") else { return nil }
    for line in text.split(separator: "\n") {
        let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count == 3 else { continue }
        let directory: String
        if fields[1].split(separator: ",").contains("memory") {
            directory = "/sys/fs/cgroup/memory" + fields[2]
        } else if fields[0] == "0" && fields[1].isEmpty {
            directory = "/sys/fs/cgroup" + (fields[2] == "/" ? "" : fields[2])
            guard ProcFS.read(directory + "/cgroup.subtree_control")?.split(separator: " ").contains("memory") == true else { continue }
        } else {
            continue
        }
        if access(directory + "/memory.stat", R_OK) == 0 && access(directory, W_OK) == 0 { return directory }
    }
    return nil
}
