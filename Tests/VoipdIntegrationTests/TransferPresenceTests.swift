import Foundation
import Glibc
import Testing
import TestAppMessages
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// The transfer service comes up after the apps (at start, after READY=1; after an in-place
/// upgrade, in the new program) and learns of an app's presence from its transitions and its
/// transfer requests: an app alive when it comes up must be told to it then, or it is taken
/// for one not running until it next changes state or asks (docs/TRANSFERS.md, step 2).
@Suite("Background transfers: the apps' presence when the service comes up", .serialized,
       .enabled(if: NginxServer.shouldRun, "needs nginx (apt-get install nginx)"))
struct TransferPresenceTests {
    @Test("upgraded in place in the middle of a foreground app's download: the app keeps getting its progress, and its result is handed over without a wake (the service knows it runs)")
    func foregroundDownloadAcrossAnUpgrade() throws {
        // 8 MB at 2 MB/s: four seconds or more, of which the upgrade takes a part.
        let nginx = try NginxServer(rateLimit: "2m")
        defer { nginx.stop() }
        _ = try nginx.serve("f0", size: 8 << 20)
        let rig = try ServiceRig()
        defer { rig.stop() }
        let files = try makeTemporaryDirectory("voipd-transfer-files")
        defer { removeTree(files) }
        let voipd = try RestartRecoveryTests.start(rig)
        let (control, _) = try RestartRecoveryTests.controls(rig)
        _ = try control.launch([Binaries.testApp, "--report", rig.reports.path], name: "viewer")
        let app = try rig.acceptApp("viewer")
        #expect(try control.app("viewer").state == .active)
        let (task, partial) = try TransferRestartTests.download(app, "\(nginx.baseURL)/slow/f0", to: files + "/f0",
                                                                 store: rig.directory + "/voipd.transfers")
        _ = try app.expect { if case .transferProgress = $0 { return true } else { return false } }

        #expect(try control.upgrade().pid == voipd.pid)
        // Every progress the old program's agent reported is within what it wrote.
        let kept = Int64(fileSize(partial) ?? 0)
        _ = try app.expect(timeout: .seconds(30)) { report in
            if case .transferProgress(_, task, let received, _, _) = report { return received > kept }
            return false
        }
        let done = try TransferDaemonTests.completions(app, 1, timeout: .seconds(60))
        #expect(done[task]?.error == nil, "\(done)")
        #expect(try control.app("viewer").state == .active)
        let stats = try control.stats()
        #expect(stats.contains("voipd_transfer_wakes_total{wake=\"relaunch\"} 0") && stats.contains("voipd_transfer_wakes_total{wake=\"resume\"} 0"),
                "a running app's result is handed over without a wake:\n\(stats.split(separator: "\n").filter { $0.contains("transfer") }.joined(separator: "\n"))")
    }
}
