import VoipdSystem

/// Anyone's `SIGCONT` resumes a process stopped with `SIGSTOP` (a shell's `fg`, `kill -CONT`,
/// a debugger), and the app then runs behind voipd's back. When voipd confirms such a stop
/// it takes a ``StopWitness`` (``AppProcess/stopWitness``), dropped when voipd itself
/// resumes the app; it is checked where voipd looks at a suspended app anyway (`status`, a
/// resume that is not a wake on data: a keep-alive, the foreground), never on the wake path.
/// The cgroup freezer has no such hole: no signal thaws a frozen cgroup.
extension Daemon {
    /// Checks a suspended app's witness and says what it finds. An app found running is
    /// stopped again (`restop`): voipd's record says suspended, and its held sockets, armed,
    /// are what wake it.
    func noticeUnexpectedResume(of app: AppRecord, restop: Bool) {
        guard let process = app.process, process.cgroup == nil else { return }
        guard let witness = process.stopWitness else {
            // Stopped again after an earlier finding: witnessed anew once the stop has landed.
            if restop && app.lifecycle.phase == .suspended { process.stopWitness = StopWitness(stoppedProcess: process.pid) }
            return
        }
        let finding = witness.check()
        switch finding {
        case .stillStopped, .gone:
            return
        case .resumed, .ranAndStoppedAgain:
            process.stopWitness = nil
            let action = !restop ? "" : finding == .ranAndStoppedAgain ? "; it is stopped again" : "; stopping it again"
            log.warning("\(app.name): pid \(process.pid) \(finding) while voipd had it suspended (a SIGCONT not voipd's: a shell's fg, kill -CONT, a debugger)\(action)")
            guard restop else { return }
            if finding == .ranAndStoppedAgain {
                process.stopWitness = StopWitness(stoppedProcess: process.pid)
                return
            }
            do {
                try suspender.suspend(process)
            } catch {
                log.warning("\(app.name): cannot stop pid \(process.pid) again: \(error)")
            }
        }
    }
}
