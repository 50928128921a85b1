import Foundation
import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport
import VoipdTransferService
import VoipdTransfers

/// An agent runs as an app's user, who can make it say anything: voipd believes it only
/// about the attempts it gave it.
@Suite("A lying agent", .enabled(if: toolAvailableOrCI("/usr/bin/python3"), "needs python3"))
struct HostileAgentTests {
    /// A stand-in agent. As root it lies: on each start it claims that the next task (the
    /// given number plus one, never given to it) completed, then reports the given one
    /// completed. As any other user it says nothing after `ready`.
    static let script = #"""
    import json, os, socket, struct
    s = socket.socket(fileno=3)
    def send(report):
        body = json.dumps(report).encode()
        s.send(struct.pack("<IHBB", len(body), 2, 0, 1) + body)
    def ended(task, attempt):
        head = {"status": 200, "headers": []}
        progress = {"bytesSent": 0, "bytesReceived": 0}
        return {"attempt": {"_0": {"task": task, "attempt": attempt,
                "event": {"ended": {"_0": {"completed": {"_0": head}}, "_1": progress}}}}}
    send({"ready": {"pid": os.getpid(), "uid": os.geteuid(), "version": 1}})
    while True:
        packet = s.recv(65536)
        if not packet:
            break
        command = json.loads(packet[8:])
        if "start" in command and os.geteuid() == 0:
            order = command["start"]["_0"]
            send(ended(order["task"] + 1, 1))
            send(ended(order["task"], order["attempt"]))
    """#

    @Test("one app's agent cannot end another app's running task", .enabled(if: getuid() == 0, "needs root (a second account)"))
    func forgedReport() throws {
        let directory = try makeTemporaryDirectory("voipd-hostile")
        defer { removeTree(directory) }
        let agent = directory + "/agent.py"
        try ("#!/usr/bin/python3\n" + Self.script + "\n").write(toFile: agent, atomically: true, encoding: .utf8)
        chmod(agent, 0o755)
        let other = SpawnCredentials(uid: 65534, gid: 65534, supplementaryGroups: [])
        let launcher = TransferAgentLauncher(executable: agent, environment: currentEnvironment(),
                                             credentials: { app in app == "other" ? other : nil })
        let loop = try TransferServiceLoop(configuration: TransferRig.fastConfiguration,
                                           store: TransferStore(directory: directory + "/store"), launcher: launcher)
        defer {
            loop.service.shutdown()
            _ = try? loop.run(timeout: 5) { loop.service.agentProcesses.isEmpty }
        }
        for app in ["phone", "other"] {
            loop.handle(.appPresence(app: app, .foreground))
            loop.handle(.openSession(TransferSessionID(app: app, identifier: "bg"), nil))
        }
        loop.handle(.createTask(TransferSessionID(app: "phone", identifier: "bg"), .download("http://127.0.0.1:9/a", to: directory + "/a")))
        loop.handle(.createTask(TransferSessionID(app: "other", identifier: "bg"), .download("http://127.0.0.1:9/b", to: directory + "/b")))
        let mine = TransferTaskID(1), theirs = TransferTaskID(2)
        #expect(loop.service.engine.tasks[theirs]?.runningAttempt?.number == 1, "running in the other account's agent")
        #expect(try loop.run(timeout: 20) { loop.service.engine.tasks[mine]?.isFinished ?? false })
        // Everything the lying agent sent has been read by now (it sent the lie first).
        #expect(loop.service.engine.tasks[theirs]?.runningAttempt?.number == 1, "the other app's task still runs")
        #expect(loop.service.agentProcesses.count == 2)
    }
}
