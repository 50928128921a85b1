import Foundation
import Glibc
import VoipdSystem
import VoipdTransfers

// voipd-transfer: voipd's transfer agent. voipd starts one per user whose apps have
// background transfers, as that user, with a SOCK_SEQPACKET socket as descriptor 3; the
// agent performs the attempts voipd orders with URLSession (FoundationNetworking, which
// voipd itself never links) and reports their progress and end (docs/TRANSFERS.md). It ends
// when voipd closes the socket; partial files stay for the next attempt to resume.

let version = 1

signal(SIGPIPE, SIG_IGN)
// A write past the file-size limit (RLIMIT_FSIZE, inherited from voipd's service) fails with
// EFBIG, the download's own error; by default SIGXFSZ would end the agent, and with it every
// attempt it runs (each retried from a new agent, the too-large one again and again).
signal(SIGXFSZ, SIG_IGN)
guard let descriptor = FileDescriptor(inherited: 3), let kind = try? Socket.kind(of: descriptor), kind.type == Socket.seqpacketType else {
    FileHandle.standardError.write(Data("voipd-transfer: descriptor 3 must be a SOCK_SEQPACKET socket to voipd; this program is started by voipd\n".utf8))
    exit(64)
}

let channel = ParentChannel(descriptor: descriptor)
let agent = TransferAgent(channel: channel)
agent.queue.sync { channel.send(.ready(pid: getpid(), uid: geteuid(), version: version)) }

while true {
    let command: AgentCommand?
    do {
        command = try channel.receive()
    } catch {
        Log.error("voipd sent something that is not a command (\(error)); ending")
        exit(65)
    }
    guard let command else { exit(0) }
    agent.queue.async { agent.handle(command) }
}
