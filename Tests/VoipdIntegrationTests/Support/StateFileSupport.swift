import CVoipd
import Foundation
import Glibc
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// State files written by the tests, in the format voipd writes (docs/CONFIGURATION.md):
/// what an attacker, a damaged disk or a reused pid could leave for a voipd to find.
enum PlantedStateFile {
    /// One app's entry, naming process `pid` with the given start time and uid.
    static func app(_ name: String, pid: pid_t, startTime: UInt64, uid: uid_t, leadsGroup: Bool = false) -> [String: Any] {
        let policy: [String: Any] = ["exitsOnSuspend": false, "canLaunch": false, "relaunchOnData": true,
                                     "runsInBackground": false, "speaksProtocol": false]
        return ["name": name, "foreground": false,
                "record": ["uid": Int(uid), "policy": policy],
                "process": ["identity": ["pid": Int(pid), "startTime": startTime, "uid": Int(uid)],
                            "leadsGroup": leadsGroup, "suspension": ["signal": [String: Any]()]]]
    }

    /// A whole file of this boot.
    static func document(_ apps: [[String: Any]]) throws -> Data {
        try JSONSerialization.data(withJSONObject: ["version": 1, "bootID": ProcFS.bootID ?? "", "writer": 1, "apps": apps])
    }

    /// Writes `content` to `path` with the mode and owner given.
    static func write(_ content: Data, to path: String, mode: mode_t = 0o600, owner: uid_t = 0) throws {
        try content.write(to: URL(fileURLWithPath: path))
        _ = try valueOrErrno("chmod") { chmod(path, mode) }
        _ = try valueOrErrno("chown") { chown(path, owner, owner) }
    }

    /// A voipd of `rig`'s started with a state directory of its own (`state` in the rig's),
    /// where a file of `apps` was planted first (root's, mode 0600); returns it and the directory.
    static func startVoipd(_ rig: ServiceRig, with apps: [[String: Any]]) throws -> (voipd: TestProcess, directory: String) {
        let directory = rig.directory + "/state"
        mkdir(directory, 0o700)
        try write(try document(apps), to: directory + "/voipd.state")
        return (try RestartRecoveryTests.start(rig, arguments: ["--state-directory", directory]), directory)
    }

    /// The state file voipd wrote, as JSON.
    static func read(_ path: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }
}

/// A process stopped on purpose, that voipd must not continue: `sleep` in a session of its
/// own, stopped, ended by pid when the test ends.
final class StoppedDecoy {
    let process: TestProcess
    let startTime: UInt64

    init() throws {
        let sleeper = try TestProcess(["/bin/sleep", "600"])
        try sleeper.pidfd.send(SIGSTOP)
        // The kernel reports the stop to the parent, this process: wait for that report.
        var info = siginfo_t()
        _ = try valueOrErrno("waitid(WSTOPPED)") { voipd_waitid_pidfd(sleeper.pidfd.descriptor.rawValue, &info, WSTOPPED) }
        startTime = try #require(ProcFS.startTime(of: sleeper.pid))
        process = sleeper
    }

    var pid: pid_t { process.pid }
    var isStopped: Bool { processState(pid) == "T" }
}

extension VoipdControl {
    /// Waits until `app` is in `state`: already, or reported by `follower` (which must
    /// follow the event stream since before the check) within the timeout.
    func waitUntil(_ app: String, is state: AppState, follower: VoipdControl, timeout: Duration = .seconds(20)) throws {
        if (try? self.app(app).state) == state { return }
        let deadline = Deadline(timeout)
        while let record = try follower.nextTransition(timeoutMilliseconds: deadline.remainingMilliseconds) {
            if record.app == app && record.to == state { return }
        }
        throw TimedOut(description: "\(app) did not reach \(state.rawValue)")
    }
}

/// Waits until `pid`, a process of someone else's (not this process's child), is stopped.
/// Nothing tells a non-parent of a stop: /proc is looked at again every millisecond (voipd
/// itself watches stops it cannot be told of this way), until the deadline.
func waitUntilStopped(_ pid: pid_t, _ deadline: Deadline) -> Bool {
    while processState(pid) != "T" {
        guard !deadline.hasPassed else { return false }
        _ = poll(nil, 0, 1)
    }
    return true
}
