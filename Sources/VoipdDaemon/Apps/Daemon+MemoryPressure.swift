import Glibc
import VoipdLifecycle
import VoipdSystem
import VoipdVocabulary

/// The PSI trigger on /proc/pressure/memory, registered in the loop.
struct MemoryPressureTrigger {
    let file: DescriptorBox
    let token: UInt64
}

/// Memory pressure, as iOS's jetsam handled it: reclaim what suspended apps hold, then end
/// apps in order (suspended before background, largest first). A VoIP app's sockets stay held.
extension Daemon {
    /// Registers a PSI trigger on /proc/pressure/memory, where the kernel offers one.
    func setUpMemoryPressureTrigger() {
        guard let trigger = configuration.memoryPressureTrigger, !trigger.isEmpty else { return }
        do {
            let fd = try openFile("/proc/pressure/memory", flags: O_RDWR | O_NONBLOCK)
            try fd.writeAll(Array(trigger.utf8) + [0])
            let token = try loop.register(fd, .priority, .memoryPressure)
            memoryPressure = MemoryPressureTrigger(file: DescriptorBox(fd), token: token)
            log.info("watching memory pressure: PSI trigger \"\(trigger)\"")
        } catch {
            log.notice("no memory-pressure trigger (\(error)); voipctl memory-pressure still works")
        }
    }

    func handleMemoryPressureEvent() {
        relieveMemoryPressure(level: .warning, count: 1, cause: "PSI trigger")
    }

    /// Reclaims every suspended app's sockets, then ends `count` apps in jetsam order.
    /// Returns the apps ended, in order.
    @discardableResult
    func relieveMemoryPressure(level: MemoryPressureLevel, count: Int, cause: String) -> [String] {
        log.notice("memory pressure (\(level.rawValue), \(cause)): ending up to \(count) apps")
        for app in apps.values where app.lifecycle.phase == .suspended {
            reclaimSockets(of: app, reason: "memory pressure")
        }
        let candidates = apps.values.compactMap { app -> JetsamCandidate? in
            guard let process = app.process, app.lifecycle.phase.isAlive, app.lifecycle.pendingTermination == nil else { return nil }
            return JetsamCandidate(name: app.name, state: app.lifecycle.state, residentBytes: ProcFS.residentBytes(of: process.pid) ?? 0,
                                   overHibernationLimit: isOverHibernationLimit(app))
        }
        let victims = Array(jetsamOrder(candidates, level: level).prefix(count))
        for name in victims {
            guard let app = apps[AppID(name)] else { continue }
            metrics.memoryPressureKills += 1
            feed(app, .memoryPressureKill)
        }
        return victims
    }
}
