import Foundation
import Glibc
import VoipdSystem
import VoipdTestSupport
import VoipdTransferService
import VoipdTransfers
import VoipdVocabulary

/// `voipd-bench transfer`: a large download through the transfer service and its agent
/// against curl, from the same nginx on loopback, in the same run.
enum TransferBenchmark {
    static func main(_ arguments: [String]) -> Int32 {
        runSubcommand("transfer", arguments: arguments, run: run)
    }

    /// One download's figures.
    struct Sample {
        var seconds: Double
        /// CPU seconds (user + system) of the downloading process.
        var cpu: Double
        /// CPU seconds of the service around the agent (the bench's own process).
        var serviceCPU: Double = 0
        /// Seconds of the fdatasync after curl (curl's runs only).
        var flushSeconds: Double = 0
        /// CPU seconds of that fdatasync (the bench's own): the writing back to the disk,
        /// which the agent does in its own process (its write-behind and its flush) and
        /// which curl leaves to the kernel's flusher threads, counted by no one.
        var flushCPU: Double = 0
    }

    static func run(_ options: TransferBenchOptions) throws {
        for tool in [options.curl, options.nginx] where access(tool, X_OK) != 0 {
            throw BenchError("\(tool) is not installed (apt-get install curl nginx)")
        }
        let agentPath = options.agent ?? parentDirectory(BenchPaths.executable) + "/voipd-transfer"
        guard access(agentPath, X_OK) == 0 else { throw BenchError("no agent at \(agentPath); build voipd-transfer or pass --agent") }
        let nginx = try NginxServer(binary: options.nginx, unprivileged: false, wrap: GuardedExec.wrap)
        let work = try TemporaryDirectory("voipd-bench")
        let downloads = options.directory ?? work.path
        let bytes = options.megabytes << 20
        let served = nginx.www + "/file.bin"
        progress("writing \(options.megabytes) MiB of random bytes to \(served)")
        try makeRandomFile(served, size: bytes)
        defer { unlink(served) }
        let url = nginx.baseURL + "/file.bin"

        mkdir(work.path + "/store", 0o700)
        let launcher = TransferAgentLauncher(executable: agentPath, environment: TransferAgentLauncher.defaultEnvironment())
        let loop = try TransferServiceLoop(configuration: TransferConfiguration(), store: TransferStore(directory: work.path + "/store"), launcher: launcher)
        defer {
            loop.service.shutdown()
            _ = try? loop.run(timeout: 5) { loop.service.agentProcesses.isEmpty }
            removeStore(work.path + "/store")
        }
        let session = TransferSessionID(app: "bench", identifier: "bench")
        loop.handle(.appPresence(app: "bench", .foreground))
        loop.handle(.openSession(session, nil))
        loop.onDelivery = { delivery in loop.handle(.eventsHandled(app: delivery.app, delivery.id)) }

        let destination = downloads + "/download.bin"
        // Warm-up: the served file in the page cache, the agent started.
        progress("warming up")
        _ = try curl(options.curl, url, to: destination, expecting: bytes)
        _ = try agent(loop, session, url, to: destination, expecting: bytes)

        var curlSamples: [Sample] = []
        var agentSamples: [Sample] = []
        for round in 1...options.runs {
            // Alternate who goes first, so neither always finds the other's dirty pages.
            let order = round % 2 == 1 ? ["curl", "agent"] : ["agent", "curl"]
            for who in order {
                if who == "curl" {
                    curlSamples.append(try curl(options.curl, url, to: destination, expecting: bytes))
                } else {
                    agentSamples.append(try agent(loop, session, url, to: destination, expecting: bytes))
                }
            }
            progress("round \(round): curl \(format(rate(bytes, curlSamples.last!.seconds))) MB/s, agent \(format(rate(bytes, agentSamples.last!.seconds))) MB/s")
        }
        let peak = loop.service.agentProcesses.first.flatMap { peakResidentKiB($0) } ?? 0
        report(options, bytes: bytes, curl: curlSamples, agent: agentSamples, agentPeakKiB: peak)
    }

    // MARK: - The two downloaders

    private static func curl(_ binary: String, _ url: String, to destination: String, expecting bytes: Int) throws -> Sample {
        unlink(destination)
        let before = childrenCPU()
        let start = MonotonicInstant.now
        let status = try runToCompletion([binary, "--silent", "--show-error", "--fail", "--output", destination, url], output: 1)
        let end = MonotonicInstant.now
        let cpu = childrenCPU() - before
        guard status == .exited(0), fileSize(destination) == Int64(bytes) else { throw BenchError("curl failed: \(status)") }
        let file = try openFile(destination, flags: O_WRONLY)
        let flushCPUBefore = ownCPU()
        _ = fdatasync(file.rawValue)
        let flushed = MonotonicInstant.now
        let flushCPU = ownCPU() - flushCPUBefore
        unlink(destination)
        return Sample(seconds: seconds(end, start), cpu: cpu, flushSeconds: seconds(flushed, end), flushCPU: flushCPU)
    }

    private static func agent(_ loop: TransferServiceLoop, _ session: TransferSessionID, _ url: String, to destination: String,
                              expecting bytes: Int) throws -> Sample {
        unlink(destination)
        let agentBefore = loop.service.agentProcesses.first.map(processCPU) ?? 0
        let selfBefore = ownCPU()
        let start = MonotonicInstant.now
        guard case .taskCreated(let id)? = loop.handle(.createTask(session, .download(url, to: destination))) else {
            throw BenchError("the task was not created")
        }
        var completion: TransferCompletion?
        let done = try loop.run(timeout: 600) {
            completion = loop.deliveries.last?.events.first { $0.task == id }.flatMap { event in
                if case .completed(let completion) = event.kind { return completion } else { return nil }
            }
            return completion != nil
        }
        let end = MonotonicInstant.now
        guard done, let completion, completion.error == nil, fileSize(destination) == Int64(bytes) else {
            throw BenchError("the agent's download failed: \(String(describing: completion?.error)) \(loop.logLines)")
        }
        guard let agentPID = loop.service.agentProcesses.first else { throw BenchError("no agent") }
        let sample = Sample(seconds: seconds(end, start), cpu: processCPU(agentPID) - agentBefore, serviceCPU: ownCPU() - selfBefore)
        unlink(destination)
        return sample
    }

    // MARK: - Report

    private static func report(_ options: TransferBenchOptions, bytes: Int, curl: [Sample], agent: [Sample], agentPeakKiB: Int) {
        let gigabytes = Double(bytes) / Double(1 << 30)
        let curlRate = median(curl.map { rate(bytes, $0.seconds) })
        let curlFlushedRate = median(curl.map { rate(bytes, $0.seconds + $0.flushSeconds) })
        let agentRate = median(agent.map { rate(bytes, $0.seconds) })
        let ratio = agentRate / curlRate
        let ratioFlushed = agentRate / curlFlushedRate
        let agentCPU = median(agent.map { $0.cpu }) / gigabytes
        let serviceCPU = median(agent.map { $0.serviceCPU }) / gigabytes
        let curlCPU = median(curl.map { $0.cpu }) / gigabytes
        let curlFlushedCPU = median(curl.map { $0.cpu + $0.flushCPU }) / gigabytes
        let meets = ratio >= 0.9
        if options.json {
            print("""
            {"megabytes":\(options.megabytes),"runs":\(options.runs),"curlMBps":\(format(curlRate)),"curlFlushedMBps":\(format(curlFlushedRate)),\
            "agentMBps":\(format(agentRate)),"ratio":\(format(ratio, 3)),"ratioFlushed":\(format(ratioFlushed, 3)),\
            "agentCPUsPerGiB":\(format(agentCPU, 3)),"serviceCPUsPerGiB":\(format(serviceCPU, 3)),"curlCPUsPerGiB":\(format(curlCPU, 3)),"curlFlushedCPUsPerGiB":\(format(curlFlushedCPU, 3)),\
            "agentPeakRSSKiB":\(agentPeakKiB),"target":0.9,"meetsTarget":\(meets)}
            """)
            return
        }
        print("""
        transfer: \(options.megabytes) MiB from nginx on loopback, \(options.runs) runs each, medians (MB = 10^6 bytes)
          curl                   \(format(curlRate)) MB/s   (with fdatasync after: \(format(curlFlushedRate)) MB/s)
          agent (voipd-transfer) \(format(agentRate)) MB/s   (flushes before its rename)
          agent / curl           \(format(ratio, 3))   (against curl + fdatasync: \(format(ratioFlushed, 3)))   target ≥ 0.9: \(meets ? "met" : "MISSED")
          CPU per GiB            agent \(format(agentCPU, 3)) s, service \(format(serviceCPU, 3)) s, curl \(format(curlCPU, 3)) s (with the fdatasync after: \(format(curlFlushedCPU, 3)) s)
          agent's peak RSS       \(agentPeakKiB / 1024) MiB
        """)
    }

    private static func rate(_ bytes: Int, _ seconds: Double) -> Double { Double(bytes) / seconds / 1e6 }

    private static func seconds(_ end: MonotonicInstant, _ start: MonotonicInstant) -> Double {
        (end - start).seconds
    }

    private static func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }

    // MARK: - CPU and files

    private static func childrenCPU() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        return cpuSeconds(usage)
    }

    private static func ownCPU() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return cpuSeconds(usage)
    }

    private static func cpuSeconds(_ usage: rusage) -> Double {
        Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// utime + stime of a process (`/proc/PID/stat`, fields 14 and 15, in clock ticks).
    private static func processCPU(_ pid: pid_t) -> Double {
        guard let text = ProcFS.read("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// VmHWM of a process, in KiB.
    private static func peakResidentKiB(_ pid: pid_t) -> Int? {
        guard let status = ProcFS.read("/proc/\(pid)/status") else { return nil }
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return nil }
        return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }

    private static func removeStore(_ path: String) {
        if let names = try? FileManager.default.contentsOfDirectory(atPath: path + "/tasks") {
            for name in names { unlink(path + "/tasks/" + name) }
        }
        rmdir(path + "/tasks")
        unlink(path + "/state.json")
        rmdir(path)
    }
}
