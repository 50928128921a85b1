import Glibc
import VoipdDaemon
import VoipdLifecycle

/// The configuration file and app manifests, through the daemon's own entry points (they
/// read files, so the input is written to one first): decoded, checked and resolved, or
/// refused with an error naming the file and the key. Whatever the file says, the resolved
/// durations and limits are ones the daemon can work with.
///
/// Input: one byte (even: the configuration file; odd: a manifest), then the file.
enum FuzzTarget {
    /// In memory (tmpfs) where there is one: rewriting a file on ext4 waits for the disk.
    static let directory: String = {
        let parent = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
        var template = Array("\(parent)/voipd-fuzz-config.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { fatalError("mkdtemp: errno \(errno)") }
        atexit {
            for name in ["voipd.json", "softphone.json"] { unlink(FuzzTarget.directory + "/" + name) }
            rmdir(FuzzTarget.directory)
        }
        return String(cString: made)
    }()

    static func run(_ input: [UInt8]) {
        guard let kind = input.first else { return }
        let isManifest = kind & 1 == 1
        let path = directory + (isManifest ? "/softphone.json" : "/voipd.json")
        write(input.dropFirst(), to: path)
        if isManifest {
            checkManifest(path)
        } else {
            checkConfiguration(path)
        }
    }

    static func checkConfiguration(_ path: String) {
        let configuration: DaemonConfiguration
        do {
            configuration = try ConfigurationFile.load(path).resolve(environment: [:], file: path)
        } catch {
            require(error.file == path && !error.message.isEmpty, "a refusal that does not say where and why: \(error)")
            return
        }
        for (name, keyPath) in LifecycleTimings.durations {
            let duration = configuration.timings[keyPath: keyPath]
            require(duration >= .zero, "\(name) resolved to \(duration)")
        }
        require(configuration.timeScale > 0 && configuration.timeScale.isFinite, "timeScale resolved to \(configuration.timeScale)")
        require((1...253).contains(configuration.socketQuota), "socketQuota resolved to \(configuration.socketQuota)")
        let limits = configuration.limits
        require(limits.appsPerUser > 0 && limits.connectionsPerUser > 0 && limits.heldSocketsPerUser > 0, "limits resolved to \(limits)")
        require(limits.clientQueueBytes >= 65536 && limits.totalQueueBytes >= limits.clientQueueBytes, "queue bounds resolved to \(limits)")
        require(limits.helloTimeout.map { $0 > .zero } ?? true, "helloTimeout resolved to \(limits)")
    }

    static func checkManifest(_ path: String) {
        let manifest: ResolvedManifest
        do {
            manifest = try ManifestCatalog.resolve(path: path, socketQuota: 64)
        } catch {
            require(error.file == path && !error.message.isEmpty, "a refusal that does not say where and why: \(error)")
            return
        }
        require(!manifest.name.isEmpty && !manifest.arguments.isEmpty && !manifest.arguments[0].isEmpty, "an app without a name or a command")
        require(manifest.environment.allSatisfy { $0.contains("=") && !$0.hasPrefix("=") }, "environment \(manifest.environment)")
        if let quota = manifest.socketQuota { require((1...64).contains(quota), "socketQuota \(quota) above the daemon's") }
    }

    static func write(_ bytes: ArraySlice<UInt8>, to path: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { fatalError("open \(path): errno \(errno)") }
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else { fatalError("write \(path): errno \(errno)") }
    }

    static var seeds: [(String, [UInt8])] {
        let configuration = #"""
            {"socket": "/run/voipd/control.sock", "socketMode": "0660", "logLevel": "notice", "timeScale": 0.5,
             "timings": {"wakeBudget": 12.5, "reclaimAfterSuspension": 0, "relaunchThrottleMaximum": 600},
             "socketQuota": 32, "eventHistory": 5000, "memoryPressureTrigger": "some 150000 2000000",
             "appsDirectory": "/etc/voipd/apps.d", "stateDirectory": "/run/voipd",
             "limits": {"appsPerUser": 8, "helloTimeout": 2.5, "clientQueueBytes": 131072, "totalQueueBytes": 1048576}}
            """#
        let manifest = #"""
            {"name": "softphone", "command": "/usr/bin/softphone", "arguments": ["--user", "alice"],
             "environment": {"SIP_SERVER": "127.0.0.1:5060"}, "workingDirectory": "/var/lib/softphone", "user": "0",
             "backgroundModes": ["voip", "audio"], "exitsOnSuspend": false, "relaunch": "onData", "speaksProtocol": true,
             "socketQuota": 8, "launchAtStart": true}
            """#
        return [
            ("configuration", [0] + Array(configuration.utf8)),
            ("configuration-empty", [0] + Array("{}".utf8)),
            ("manifest", [1] + Array(manifest.utf8)),
            ("manifest-minimal", [1] + Array(#"{"command": "softphone"}"#.utf8)),
        ]
    }
}
