import VoipdSystem

// How each record goes into an in-place upgrade's snapshot and comes back out: its own
// Codable state as it is, its descriptors by number (they stay open across the exec).

extension DaemonSnapshot.Client {
    init(_ client: ClientConnection) {
        self.init(id: client.id, descriptor: client.descriptor.rawValue, credentials: client.credentials, state: client.state,
                  outbound: client.outbound.map { DaemonSnapshot.Queued(packet: $0.packet, descriptors: $0.descriptors.borrowedNumbers) })
    }
}

extension ClientConnection {
    /// The connection the old program described; `adopt` takes each descriptor it names.
    convenience init(carried saved: DaemonSnapshot.Client, adopting adopt: (CInt) throws(Errno) -> FileDescriptor) throws(Errno) {
        self.init(id: saved.id, descriptor: try adopt(saved.descriptor), credentials: saved.credentials)
        state = saved.state
        for queued in saved.outbound {
            let descriptors = DescriptorBag()
            for number in queued.descriptors { descriptors.append(try adopt(number)) }
            outbound.append((queued.packet, descriptors))
            queuedBytes += ClientQueues.cost(of: queued.packet, descriptors: queued.descriptors.count)
        }
    }
}

extension DaemonSnapshot.App {
    init(_ app: AppRecord) {
        self.init(name: app.name, process: app.process.map(DaemonSnapshot.Process.init), processIdentity: app.process?.identity,
                  processCgroup: app.process?.cgroup.map { DaemonSnapshot.CarriedCgroup(path: $0.cgroup.path, version: $0.cgroup.version) },
                  state: app.state, lifecycle: app.lifecycle, launch: app.launch.map(DaemonSnapshot.Launch.init))
    }
}

extension DaemonSnapshot.Process {
    init(_ process: AppProcess) {
        self.init(pid: process.pid, pidfd: process.pidfd.descriptor.rawValue, isChild: process.isChild,
                  signalsGroup: process.signalsGroup)
    }
}

extension DaemonSnapshot.Launch {
    init(_ launch: LaunchSpecification) {
        self.init(command: launch.command, standardOutput: launch.standardOutputNumber, standardError: launch.standardErrorNumber)
    }
}

extension AppRecord {
    /// The app the old program described, with its process and launch; `adopt` takes each
    /// descriptor it names.
    convenience init(carried saved: DaemonSnapshot.App, adopting adopt: (CInt) throws(Errno) -> FileDescriptor) throws(Errno) {
        self.init(name: saved.name, state: saved.state, lifecycle: saved.lifecycle)
        if let launch = saved.launch {
            self.launch = LaunchSpecification(launch.command, standardOutput: try launch.standardOutput.map(adopt),
                                              standardError: try launch.standardError.map(adopt))
        }
        if let process = saved.process {
            self.process = AppProcess(pidfd: PidFd(adopting: try adopt(process.pidfd), pid: process.pid), isChild: process.isChild,
                                      signalsGroup: process.signalsGroup)
            self.process?.identity = saved.processIdentity
        }
    }
}
