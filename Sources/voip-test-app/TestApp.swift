import Foundation
import Glibc
import TestAppMessages
import VoipClient
import VoipdSystem

/// The test app's state and loop (see main.swift for its options).
final class TestApp {
    private var options: [String]
    private var noAck = Set<AppEventKind>()
    private var readsOnItsOwn = true
    private var exitsOnWake = false
    private var answersOnWake = false
    private var reconnects = true
    /// `--echo`: what it reads is written back after this long, not reported.
    private var echoDelay: Duration?
    /// Memory the app holds on purpose (touched, so it is resident).
    private var ballast: [[UInt8]] = []
    /// Memory filled with a known pattern, checked after it was paged out and back.
    private var patterned: PatternedMemory?
    private var sockets: [String: TestSocket] = [:]
    /// Connections accepted on VoIP listeners so far: their names' numbers.
    private var acceptedCount = 0
    private var channel: ReportChannel!
    /// The connection to voipd; nil when the app runs `--without-voipd`.
    private var application: VoIPApplication?
    /// What the app answers transfer challenges with (nil: the 401 stands).
    private var credential: (user: String, password: String)?
    /// Downloads created one after another, each when the previous one completes.
    private var chain: (session: String, url: String, directory: String, count: Int, created: Int)?

    init(arguments: [String]) { options = arguments }

    private func option(_ name: String) -> String? {
        guard let index = options.firstIndex(of: name), index + 1 < options.count else { return nil }
        defer { options.removeSubrange(index...index + 1) }
        return options[index + 1]
    }

    func run() -> Int32 {
        let reportPath = option("--report")
        let appName = option("--name")
        let socketPath = option("--socket")
        while let kind = option("--no-ack") {
            guard let kind = AppEventKind(rawValue: kind) else {
                _ = "voip-test-app: --no-ack \(kind): no such event\n".withCString { Glibc.write(2, $0, strlen($0)) }
                return 2
            }
            noAck.insert(kind)
        }
        readsOnItsOwn = !options.contains("--no-read")
        exitsOnWake = options.contains("--exit-on-wake")
        answersOnWake = options.contains("--answer-on-wake")
        reconnects = !options.contains("--no-reconnect")
        if let micros = option("--echo") {
            guard let value = Int(micros), value >= 0 else {
                _ = "voip-test-app: --echo \(micros): not a number of microseconds\n".withCString { Glibc.write(2, $0, strlen($0)) }
                return 2
            }
            echoDelay = .microseconds(value)
        }
        let withoutVoipd = options.contains("--without-voipd")
        guard let reportPath else {
            _ = "voip-test-app: --report PATH is required\n".withCString { Glibc.write(2, $0, strlen($0)) }
            return 2
        }
        do {
            channel = try ReportChannel(path: reportPath)
        } catch {
            return 1
        }
        guard !withoutVoipd else {
            channel.report(.hello(pid: getpid(), state: .active, restored: []))
            return loop()
        }
        let application: VoIPApplication
        do {
            application = try VoIPApplication(name: appName, socketPath: socketPath)
        } catch {
            channel.report(.error(message: "connect: \(error)"))
            return 1
        }
        self.application = application
        application.reconnection.isEnabled = reconnects
        application.delegate = self
        let restored = takeRestoredSockets(application)
        channel.report(.hello(pid: getpid(), state: application.state, restored: restored))
        return loop()
    }

    /// The connection to voipd, for a command that needs it.
    private func voipd() throws -> VoIPApplication {
        guard let application else { throw Errno(ENOTCONN, call: "--without-voipd") }
        return application
    }

    /// The sockets voipd handed back, taken as the app's VoIP sockets; their names.
    private func takeRestoredSockets(_ application: VoIPApplication) -> [String] {
        let restored = application.restoredSocketNames
        for name in restored {
            if let fd = application.takeRestoredSocket(named: name) {
                sockets[name] = TestSocket(name: name, descriptor: fd, isVoIP: true)
            }
        }
        return restored
    }

    private func readSocket(_ socket: TestSocket) {
        if socket.isListener { return acceptConnections(socket) }
        if socket.isUnconnectedDatagram { return answerDatagram(socket) }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = buffer.withUnsafeMutableBytes { Glibc.recv(socket.descriptor.rawValue, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if n == 0 && socket.isAccepted { closeAccepted(socket) }
        if n > 0, let echoDelay {
            return echo(buffer[0..<n], to: socket, after: echoDelay)
        }
        let outcome: TestAppReport.ReadOutcome
        if n > 0 {
            outcome = .data(String(decoding: buffer[0..<n], as: UTF8.self))
        } else if n == 0 {
            outcome = .endOfFile
        } else if errno != EAGAIN {
            outcome = .failed(errno: errno)
        } else {
            return
        }
        // An echoing app is driven in floods that nobody reads the reports of.
        if echoDelay == nil { channel.report(.read(socket: socket.name, outcome: outcome)) }
    }

    /// Takes every connection waiting on a VoIP listener (none may wait: it may have taken
    /// them before a stop), registers each with voipd as a VoIP socket of its own (as a
    /// softphone does with the connection its registrar opens) and reads what came on it.
    private func acceptConnections(_ listener: TestSocket) {
        while true {
            let connection: FileDescriptor
            do {
                guard case .processed(let accepted) = try Socket.accept(listener.descriptor) else { return }
                connection = accepted
            } catch {
                return channel.report(.accepted(socket: listener.name, errno: error.rawValue))
            }
            acceptedCount += 1
            let name = "\(listener.name)-in-\(acceptedCount)"
            // Taking a connection takes time as well (a TLS handshake, say): a stop can land
            // between the accept and the registration, leaving it held by nobody.
            if let echoDelay { handle(for: echoDelay) }
            do {
                try voipd().registerVoIPSocket(connection.rawValue, name: name)
            } catch {
                channel.report(.registrationRefused(socket: name, message: "\(error)"))
            }
            let socket = TestSocket(name: name, descriptor: connection, isVoIP: true, isAccepted: true)
            sockets[name] = socket
            if echoDelay == nil { channel.report(.accepted(socket: listener.name, errno: nil)) }
            readSocket(socket)
        }
    }

    /// The peer closed a connection accepted on a VoIP listener: voipd lets it go too.
    private func closeAccepted(_ socket: TestSocket) {
        sockets[socket.name] = nil
        do {
            try voipd().unregisterVoIPSocket(name: socket.name)
        } catch {
            channel.report(.error(message: "unregister \(socket.name): \(error)"))
        }
    }

    /// Reads one datagram from an unconnected UDP socket: echoed to its sender after
    /// `--echo`'s delay, else reported.
    private func answerDatagram(_ socket: TestSocket) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        var sender = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let n = buffer.withUnsafeMutableBytes { bytes in
            withUnsafeMutablePointer(to: &sender) { address in
                address.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.recvfrom(socket.descriptor.rawValue, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0, &length)
                }
            }
        }
        guard n >= 0 else {
            if errno != EAGAIN { channel.report(.read(socket: socket.name, outcome: .failed(errno: errno))) }
            return
        }
        guard let echoDelay else {
            return channel.report(.read(socket: socket.name, outcome: .data(String(decoding: buffer[0..<n], as: UTF8.self))))
        }
        handle(for: echoDelay)
        let sent = buffer.withUnsafeBytes { bytes in
            withUnsafePointer(to: &sender) { address in
                address.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.sendto(socket.descriptor.rawValue, bytes.baseAddress, n, Int32(MSG_NOSIGNAL), $0, length)
                }
            }
        }
        if sent < 0 { channel.report(.error(message: "echo on \(socket.name): errno \(errno)")) }
    }

    /// Handling a message takes this long (the time it takes, not a synchronization).
    private func handle(for delay: Duration) {
        guard delay > .zero else { return }
        var request = timespec(tv_sec: Int(delay.components.seconds), tv_nsec: Int(delay.components.attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) < 0 && errno == EINTR { request = remaining }
    }

    /// Handles what it read for `delay` (the time it takes, not a synchronization), then
    /// answers with it.
    private func echo(_ bytes: ArraySlice<UInt8>, to socket: TestSocket, after delay: Duration) {
        handle(for: delay)
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(socket.descriptor.rawValue, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return channel.report(.error(message: "echo on \(socket.name): errno \(errno)")) }
            sent += n
        }
    }

    private func execute(_ command: TestAppCommand) throws {
        switch command {
        case .register(let name, let address):
            let fd = try connectAddress(address)
            try voipd().registerVoIPSocket(fd.rawValue, name: name)
            sockets[name] = TestSocket(name: name, descriptor: fd, isVoIP: true)
            channel.report(.registered(socket: name))
        case .connect(let name, let address):
            sockets[name] = TestSocket(name: name, descriptor: try connectAddress(address), isVoIP: false)
            channel.report(.connected(socket: name))
        case .listen(let name):
            let fd = try Socket.listenTCP()
            let port = try Socket.localPort(fd)
            sockets[name] = TestSocket(name: name, descriptor: fd, isVoIP: false, isListener: true)
            channel.report(.listening(socket: name, port: port))
        case .registerServing(let name, let transport):
            let fd = transport == "udp" ? try Socket.bindUDP() : try Socket.listenTCP()
            try fd.setNonBlocking()
            let port = try Socket.localPort(fd)
            try voipd().registerVoIPSocket(fd.rawValue, name: name)
            sockets[name] = TestSocket(name: name, descriptor: fd, isVoIP: true, isListener: transport != "udp",
                                       isUnconnectedDatagram: transport == "udp")
            channel.report(.listening(socket: name, port: port))
        case .unregister(let name):
            try voipd().unregisterVoIPSocket(name: name)
            channel.report(.unregistered(socket: name))
        case .retrieve(let name):
            let copy = try voipd().retrieveVoIPSocket(name: name)
            let same = try sockets[name].map { try Socket.inode(of: $0.descriptor) == Socket.inode(of: copy) } ?? false
            channel.report(.retrieved(socket: name, sameSocket: same))
        case .closeOwn(let name):
            sockets[name] = nil
            channel.report(.closed(socket: name))
        case .read(let name):
            guard let socket = sockets[name] else { throw NoSuchSocket(name: name) }
            readSocket(socket)
        case .write(let name, let data):
            guard let socket = sockets[name] else { throw NoSuchSocket(name: name) }
            let bytes = Array(data.utf8)
            let n = bytes.withUnsafeBytes { Glibc.send(socket.descriptor.rawValue, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            channel.report(.wrote(socket: name, bytes: max(n, 0), errno: n < 0 ? errno : nil))
        case .accept(let name):
            guard let socket = sockets[name] else { throw NoSuchSocket(name: name) }
            let fd = Glibc.accept(socket.descriptor.rawValue, nil, nil)
            channel.report(.accepted(socket: name, errno: fd < 0 ? errno : nil))
            if fd >= 0 { close(fd) }
        case .beginTask(let taskName):
            let channel = self.channel!
            let id = try voipd().beginBackgroundTask(name: taskName) {
                channel.report(.expiring(name: taskName))
            }
            channel.report(.task(name: taskName, id: id.rawValue))
        case .endTask(let id):
            try voipd().endBackgroundTask(BackgroundTaskIdentifier(rawValue: id))
            channel.report(.taskEnded(id: id))
        case .keepAlive(let seconds):
            do {
                let channel = self.channel!
                try voipd().setKeepAliveTimeout(seconds) { channel.report(.keepAliveHandler) }
                channel.report(.keepAliveSet)
            } catch {
                channel.report(.keepAliveRefused(message: "\(error)"))
            }
        case .audioSession(let active):
            do {
                try voipd().setAudioSessionActive(active)
                channel.report(.audioSession(active: active))
            } catch {
                channel.report(.audioSessionRefused(message: "\(error)"))
            }
        case .acknowledge(let id):
            try voipd().acknowledge(eventID: id)
        case .allocate(let megabytes):
            ballast.append([UInt8](repeating: 1, count: megabytes << 20))
            channel.report(.allocated(megabytes: ballast.reduce(0) { $0 + $1.count } >> 20))
        case .fillMemory(let megabytes, let seed):
            patterned = nil
            let memory = try PatternedMemory(megabytes: megabytes, seed: seed)
            patterned = memory
            channel.report(.memoryFilled(megabytes: memory.megabytes, checksum: memory.checksum()))
        case .checksumMemory:
            guard let patterned else { throw Errno(EINVAL, call: "checksumMemory: no memory filled") }
            channel.report(.memoryChecksum(patterned.checksum()))
        case .openSession(let session, let discretionary, let resourceTimeout):
            var options = discretionary.map { TransferOptions(discretionary: $0) }
            if let resourceTimeout {
                options = options ?? TransferOptions()
                options?.timeoutIntervalForResource = resourceTimeout
            }
            let tasks = try voipd().backgroundSession(identifier: session, options: options, delegate: self).getAllTasks()
            channel.report(.sessionOpened(session: session, tasks: tasks.map(\.task)))
        case .download(let session, let url, let path):
            let task = try backgroundSession(session).downloadTask(with: url, to: path)
            channel.report(.transferCreated(session: session, task: task))
        case .upload(let session, let url, let path):
            let task = try backgroundSession(session).uploadTask(with: url, fromFile: path)
            channel.report(.transferCreated(session: session, task: task))
        case .chain(let session, let url, let directory, let count):
            chain = (session, url, directory, count, 0)
        case .credential(let user, let password):
            credential = user.flatMap { user in password.map { (user, $0) } }
        case .exit(let code):
            exit(code)
        case .crash:
            abort()
        }
    }

    private func handle(_ event: LifecycleEvent, from application: VoIPApplication) throws {
        let acknowledges = !noAck.contains(event.kind)
        // An echoing app is driven in floods that nobody reads the reports of.
        if echoDelay == nil {
            channel.report(.event(id: event.id, kind: event.kind, state: event.state, socket: event.socket, acknowledged: acknowledges))
        }
        application.dispatch(event)
        if exitsOnWake && event.kind == .voipSocketReadable { exit(3) }
        // In the wake itself, not when a test that read the report tells it to: the wake
        // budget is the app's time to react, not the test's.
        if answersOnWake && event.kind == .voipSocketReadable { try execute(.audioSession(active: true)) }
        // What woke it is read before the wake is acknowledged, as a VoIP app must: voipd may
        // stop it as soon as the acknowledgement arrives, before the loop polls again.
        if event.kind == .voipSocketReadable, readsOnItsOwn, let name = event.socket?.name, let socket = sockets[name] {
            readSocket(socket)
        }
        if acknowledges { try application.acknowledge(event) }
        if event.kind == .willTerminate && acknowledges { exit(0) }
    }

    private func loop() -> Int32 {
        while true {
            // Without voipd, the first entry is a negative descriptor: poll passes over it.
            var polled = [pollfd(fd: application?.fileDescriptor ?? -1, events: Int16(POLLIN), revents: 0),
                          pollfd(fd: channel.descriptor.rawValue, events: Int16(POLLIN), revents: 0)]
            let watched = sockets.values.filter { readsOnItsOwn && $0.isRead }.sorted { $0.name < $1.name }
            polled += watched.map { pollfd(fd: $0.descriptor.rawValue, events: Int16(POLLIN), revents: 0) }
            let timeout: Int32 = application?.hasBufferedMessages == true ? 0 : -1
            if poll(&polled, nfds_t(polled.count), timeout) < 0 && errno != EINTR { break }
            for (index, socket) in watched.enumerated() where polled[index + 2].revents != 0 { readSocket(socket) }
            if polled[1].revents != 0 {
                guard let commands = channel.readCommands() else { return 0 }
                for command in commands {
                    do { try execute(command) } catch { channel.report(.error(message: "\(command): \(error)")) }
                }
            }
            if let application, polled[0].revents != 0 || application.hasBufferedMessages {
                do {
                    while let event = try application.nextEvent(timeoutMilliseconds: 0) { try handle(event, from: application) }
                } catch VoipdError.disconnected {
                    channel.report(.disconnected)
                    return 0
                } catch {
                    channel.report(.error(message: "\(error)"))
                }
            }
        }
        return 1
    }
}

/// voipd going away and coming back, reported as it happens.
extension TestApp: VoIPApplicationDelegate {
    func applicationSupervisorDidBecomeUnavailable(_ application: VoIPApplication) {
        channel.report(.disconnected)
    }

    func applicationSupervisorDidBecomeAvailable(_ application: VoIPApplication) {
        let restored = takeRestoredSockets(application)
        channel.report(.reconnected(pid: getpid(), state: application.state,
                                    registered: application.registeredVoIPSocketNames, restored: restored))
    }

    func application(_ application: VoIPApplication, didFailToRegisterVoIPSocket name: String, error: VoipdError) {
        channel.report(.registrationRefused(socket: name, message: "\(error)"))
    }
}

/// Background transfers: sessions opened on command, or again when voipd relaunches the app
/// for their events; each completion and challenge reported.
extension TestApp: BackgroundSessionDelegate {
    private func backgroundSession(_ identifier: String) throws -> BackgroundSession {
        let application = try voipd()
        return try application.openedBackgroundSession(identifier) ?? application.backgroundSession(identifier: identifier, delegate: self)
    }

    func application(_ application: VoIPApplication, handleEventsForBackgroundSession identifier: String) {
        do {
            _ = try application.backgroundSession(identifier: identifier, delegate: self)
        } catch {
            channel.report(.error(message: "reopening session \(identifier): \(error)"))
        }
    }

    func backgroundSession(_ session: BackgroundSession, task: UInt64, didCompleteWith completion: TransferCompletion) {
        channel.report(.transferCompleted(session: session.identifier, task: task, status: completion.response?.status,
                                          error: completion.error?.description))
        guard var chain, chain.session == session.identifier, chain.created < chain.count else { return }
        chain.created += 1
        self.chain = chain
        do {
            let next = try session.downloadTask(with: chain.url, to: "\(chain.directory)/chain-\(chain.created)")
            channel.report(.transferCreated(session: session.identifier, task: next))
        } catch {
            channel.report(.error(message: "chain: \(error)"))
        }
    }

    func backgroundSession(_ session: BackgroundSession, task: UInt64, didUpdate progress: TransferProgress) {
        channel.report(.transferProgress(session: session.identifier, task: task, received: progress.bytesReceived,
                                         expected: progress.bytesExpectedToReceive, sent: progress.bytesSent))
    }

    func backgroundSession(_ session: BackgroundSession, task: UInt64, didReceive challenge: AuthenticationChallenge) -> ChallengeAnswer {
        channel.report(.transferChallenged(session: session.identifier, task: task, answered: credential != nil))
        guard let credential else { return .performDefaultHandling }
        return .useCredential(user: credential.user, password: credential.password)
    }
}
