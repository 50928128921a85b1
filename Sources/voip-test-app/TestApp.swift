import Foundation
import Glibc
import VoipClient
import VoipdSystem

/// The test app's state and loop (see main.swift for its options).
final class TestApp {
    private var options: [String]
    private var noAck = Set<String>()
    private var readsOnItsOwn = true
    private var exitsOnWake = false
    private var reconnects = true
    /// Memory the app holds on purpose (touched, so it is resident).
    private var ballast: [[UInt8]] = []
    private var sockets: [String: TestSocket] = [:]
    private var channel: ReportChannel!
    private var application: VoIPApplication!

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
        while let kind = option("--no-ack") { noAck.insert(kind) }
        readsOnItsOwn = !options.contains("--no-read")
        exitsOnWake = options.contains("--exit-on-wake")
        reconnects = !options.contains("--no-reconnect")
        guard let reportPath else {
            _ = "voip-test-app: --report PATH is required\n".withCString { Glibc.write(2, $0, strlen($0)) }
            return 2
        }
        do {
            channel = try ReportChannel(path: reportPath)
        } catch {
            return 1
        }
        do {
            application = try VoIPApplication(name: appName, socketPath: socketPath)
        } catch {
            channel.report(["event": "error", "message": "connect: \(error)"])
            return 1
        }
        application.reconnection.isEnabled = reconnects
        application.delegate = self
        let restored = takeRestoredSockets()
        channel.report(["event": "hello", "pid": Int(getpid()), "state": application.state.rawValue, "restored": restored])
        return loop()
    }

    /// The sockets voipd handed back, taken as the app's VoIP sockets; their names.
    private func takeRestoredSockets() -> [String] {
        let restored = application.restoredSocketNames
        for name in restored {
            if let fd = application.takeRestoredSocket(named: name) {
                sockets[name] = TestSocket(name: name, descriptor: fd, isVoIP: true)
            }
        }
        return restored
    }

    private func readSocket(_ socket: TestSocket) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = buffer.withUnsafeMutableBytes { Glibc.recv(socket.descriptor.rawValue, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if n > 0 {
            channel.report(["event": "read", "socket": socket.name, "data": String(decoding: buffer[0..<n], as: UTF8.self), "bytes": n])
        } else if n == 0 {
            channel.report(["event": "read", "socket": socket.name, "eof": true, "bytes": 0])
        } else if errno != EAGAIN {
            channel.report(["event": "read", "socket": socket.name, "errno": Int(errno), "bytes": -1])
        }
    }

    private func execute(_ command: [String: Any]) throws {
        let name = command["socket"] as? String ?? ""
        switch command["cmd"] as? String ?? "" {
        case "register":
            let fd = try connectAddress(command["connect"] as? String ?? "")
            try application.registerVoIPSocket(fd.rawValue, name: name)
            sockets[name] = TestSocket(name: name, descriptor: fd, isVoIP: true)
            channel.report(["event": "registered", "socket": name])
        case "connect":
            sockets[name] = TestSocket(name: name, descriptor: try connectAddress(command["connect"] as? String ?? ""), isVoIP: false)
            channel.report(["event": "connected", "socket": name])
        case "listen":
            let fd = try Socket.listenTCP()
            let port = try Socket.localPort(fd)
            sockets[name] = TestSocket(name: name, descriptor: fd, isVoIP: false, isListener: true)
            channel.report(["event": "listening", "socket": name, "port": Int(port)])
        case "unregister":
            try application.unregisterVoIPSocket(name: name)
            channel.report(["event": "unregistered", "socket": name])
        case "retrieve":
            let copy = try application.retrieveVoIPSocket(name: name)
            let same = sockets[name].map { (try? Socket.inode(of: $0.descriptor.rawValue)) == (try? Socket.inode(of: copy.rawValue)) } ?? false
            channel.report(["event": "retrieved", "socket": name, "sameSocket": same])
        case "closeOwn":
            sockets[name] = nil
            channel.report(["event": "closed", "socket": name])
        case "read":
            if let socket = sockets[name] { readSocket(socket) }
        case "write":
            guard let socket = sockets[name] else { return }
            let bytes = Array((command["data"] as? String ?? "").utf8)
            let n = bytes.withUnsafeBytes { Glibc.send(socket.descriptor.rawValue, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            channel.report(["event": "wrote", "socket": name, "ok": n == bytes.count, "errno": n < 0 ? Int(errno) : 0])
        case "accept":
            guard let socket = sockets[name] else { return }
            let fd = accept(socket.descriptor.rawValue, nil, nil)
            channel.report(["event": "accepted", "socket": name, "ok": fd >= 0, "errno": fd < 0 ? Int(errno) : 0])
            if fd >= 0 { close(fd) }
        case "beginTask":
            let taskName = command["name"] as? String ?? "task"
            let channel = self.channel!
            let id = try application.beginBackgroundTask(name: taskName) {
                channel.report(["event": "expiring", "name": taskName])
            }
            channel.report(["event": "task", "name": taskName, "id": Int(id.rawValue)])
        case "endTask":
            try application.endBackgroundTask(BackgroundTaskIdentifier(rawValue: UInt64(command["id"] as? Int ?? 0)))
            channel.report(["event": "taskEnded", "id": command["id"] as? Int ?? 0])
        case "keepAlive":
            do {
                let channel = self.channel!
                try application.setKeepAliveTimeout(command["seconds"] as? Double ?? 600) { channel.report(["event": "keepAliveHandler"]) }
                channel.report(["event": "keepAliveSet"])
            } catch {
                channel.report(["event": "keepAliveRefused", "message": "\(error)"])
            }
        case "ack":
            try application.acknowledge(eventID: UInt64(command["id"] as? Int ?? 0))
        case "allocate":
            let megabytes = command["megabytes"] as? Int ?? 1
            ballast.append([UInt8](repeating: 1, count: megabytes << 20))
            channel.report(["event": "allocated", "megabytes": ballast.reduce(0) { $0 + $1.count } >> 20])
        case "exit":
            exit(Int32(command["code"] as? Int ?? 0))
        case "crash":
            abort()
        default:
            channel.report(["event": "error", "message": "unknown command \(command)"])
        }
    }

    private func handle(_ event: LifecycleEvent) throws {
        var fields: [String: Any] = ["event": "lifecycle", "kind": event.kind.rawValue, "id": Int(event.id), "state": event.state.rawValue,
                                     "acked": !noAck.contains(event.kind.rawValue)]
        if let socket = event.socket {
            fields["socket"] = socket.name
            fields["bytes"] = socket.bytesAvailable
            fields["peerClosed"] = socket.peerClosed
        }
        channel.report(fields)
        application.dispatch(event)
        if exitsOnWake && event.kind == .voipSocketReadable { exit(3) }
        // What woke it is read before the wake is acknowledged, as a VoIP app must: voipd may
        // stop it as soon as the acknowledgement arrives, before the loop polls again.
        if event.kind == .voipSocketReadable, readsOnItsOwn, let name = event.socket?.name, let socket = sockets[name] {
            readSocket(socket)
        }
        if !noAck.contains(event.kind.rawValue) { try application.acknowledge(event) }
        if event.kind == .willTerminate && !noAck.contains(event.kind.rawValue) { exit(0) }
    }

    private func loop() -> Int32 {
        while true {
            var polled = [pollfd(fd: application.fileDescriptor, events: Int16(POLLIN), revents: 0),
                          pollfd(fd: channel.descriptor.rawValue, events: Int16(POLLIN), revents: 0)]
            let watched = sockets.values.filter { readsOnItsOwn && $0.isVoIP }.sorted { $0.name < $1.name }
            polled += watched.map { pollfd(fd: $0.descriptor.rawValue, events: Int16(POLLIN), revents: 0) }
            let timeout: Int32 = application.hasBufferedMessages ? 0 : -1
            if poll(&polled, nfds_t(polled.count), timeout) < 0 && errno != EINTR { break }
            for (index, socket) in watched.enumerated() where polled[index + 2].revents != 0 { readSocket(socket) }
            if polled[1].revents != 0 {
                guard let commands = channel.readCommands() else { return 0 }
                for command in commands {
                    do { try execute(command) } catch { channel.report(["event": "error", "message": "\(command["cmd"] ?? ""): \(error)"]) }
                }
            }
            if polled[0].revents != 0 || application.hasBufferedMessages {
                do {
                    while let event = try application.nextEvent(timeoutMilliseconds: 0) { try handle(event) }
                } catch VoipdError.disconnected {
                    channel.report(["event": "disconnected"])
                    return 0
                } catch {
                    channel.report(["event": "error", "message": "\(error)"])
                }
            }
        }
        return 1
    }
}

/// voipd going away and coming back, reported as it happens.
extension TestApp: VoIPApplicationDelegate {
    func applicationSupervisorDidBecomeUnavailable(_ application: VoIPApplication) {
        channel.report(["event": "disconnected"])
    }

    func applicationSupervisorDidBecomeAvailable(_ application: VoIPApplication) {
        let restored = takeRestoredSockets()
        channel.report(["event": "reconnected", "pid": Int(getpid()), "state": application.state.rawValue,
                        "registered": application.registeredVoIPSocketNames, "restored": restored])
    }

    func application(_ application: VoIPApplication, didFailToRegisterVoIPSocket name: String, error: VoipdError) {
        channel.report(["event": "registrationRefused", "socket": name, "message": "\(error)"])
    }
}
