import Foundation
import Glibc
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem

/// Everything a running voipd knows, for an in-place upgrade: the new program reads it and
/// carries on where the old one stopped. Descriptors are kept by number (they survive the
/// exec); every app's lifecycle goes as it is.
struct DaemonSnapshot: Codable {
    struct Client: Codable {
        var id: UInt64
        var descriptor: CInt
        var pid: Int32
        var uid: UInt32
        var gid: UInt32
        var appName: String?
        var following: String?
        var followingStates: [AppState]?
        /// Frames the kernel had not taken yet, with their descriptors.
        var outbound: [Queued]
    }

    struct Queued: Codable {
        var packet: [UInt8]
        var descriptors: [CInt]
    }

    struct Process: Codable {
        var pid: Int32
        var pidfd: CInt
        var isChild: Bool
        /// Absent in snapshots of voipds before the state file: as `isChild`.
        var signalsGroup: Bool?
    }

    struct Launch: Codable {
        var arguments: [String]
        var environment: [String]
        var workingDirectory: String?
        var account: ResolvedManifest.Account?
        var standardOutput: CInt?
        var standardError: CInt?
    }

    struct Waiter: Codable {
        var client: UInt64
        var request: UInt64
    }

    struct App: Codable {
        var name: String
        var uid: UInt32
        var unclaimed: Bool
        var lifecycle: AppLifecycle
        var process: Process?
        var launch: Launch?
        var client: UInt64?
        var reclaimedSockets: Int
        var reclaimedInodes: [UInt64]
        var since: Double
        var launchWaiters: [Waiter]
    }

    struct Held: Codable {
        var id: UInt64
        var app: String
        var name: String
        var descriptor: CInt
        var kind: String
        var origin: HeldSocketOrigin
        var registeredAt: Double
        var armed: Bool
        var arrivedSinceReport: Bool
        var peerClosed: Bool
        var peerClosedReported: Bool
    }

    struct Timer: Codable {
        var key: DaemonTimer
        var deadline: Duration
        var tolerance: Duration
    }

    var listener: CInt
    var boundControlSocket: Bool
    var nextClientID: UInt64
    var locked: Bool
    var clients: [Client]
    var apps: [App]
    var heldSockets: [Held]
    var timers: [Timer]
    var events: [TransitionRecord]
    var metrics: Metrics
    var followers: [UInt64]
    /// The `upgrade` request to answer once the new program runs.
    var requester: Waiter?
    /// The resource limits the first program was started with (its apps get them).
    var appResourceLimits: [ResourceLimit]? = nil

    /// Every descriptor the snapshot names: they must survive the exec.
    var descriptors: [CInt] {
        [listener] + clients.flatMap { [$0.descriptor] + $0.outbound.flatMap(\.descriptors) } + heldSockets.map(\.descriptor)
            + apps.flatMap { app in [app.process?.pidfd, app.launch?.standardOutput, app.launch?.standardError].compactMap { $0 } }
    }

    /// Reads a snapshot from a descriptor (a memfd the old program wrote), and closes it.
    static func read(from fd: CInt) throws -> DaemonSnapshot {
        let file = FileDescriptor(adopting: fd)
        var data = Data()
        while true {
            let chunk = try file.read(upTo: 1 << 20)
            if chunk.isEmpty { break }
            data.append(contentsOf: chunk)
        }
        return try JSONDecoder().decode(DaemonSnapshot.self, from: data)
    }
}
