import VoipdProtocol

/// The columns of `voipctl top`, left to right: what each shows, and how wide it is at
/// least (the last one takes what the screen has left). Adding a column is one more line.
extension TopColumn {
    static let all: [TopColumn] = [
        TopColumn("NAME", "name", width: 14, .left) { .text($0.status.name) },
        TopColumn("PID", "pid", width: 7) { $0.status.pid.map { .count(Int($0)) } ?? .missing },
        TopColumn("STATE", "state", width: 10, .left) { .text(Output.state(of: $0.status)) },
        TopColumn("FOR", "secondsInState", width: 6) { .elapsed($0.secondsInState) },
        TopColumn("SOCK", "voipSockets", width: 4) { .count($0.status.voipSockets) },
        TopColumn("WAKES", "wakes", width: 5) { .count($0.status.wakes) },
        TopColumn("CALL", "inCallSeconds", width: 6) { $0.status.inCallSeconds.map(TopValue.elapsed) ?? .missing },
        TopColumn("CPU%", "cpuPercent", width: 5) { $0.cpu.map { .percent($0.percent) } ?? .missing },
        TopColumn("CPU TIME", "cpuSeconds", width: 8) { $0.cpu.map { .cpuTime($0.total.seconds) } ?? .missing },
        TopColumn("MEM", "residentBytes", width: 6) { $0.status.residentBytes.map(TopValue.bytes) ?? .missing },
        TopColumn("LAST TRANSITION", "lastTransition", width: 16, .left) { $0.lastTransition.map { .text(TopRow.describe($0)) } ?? .missing },
    ]
}
