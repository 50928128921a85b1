import Glibc
import Testing
import VoipdSystem
import VoipdVocabulary

/// Issue 10, part 1: an app that reads its VoIP socket whenever it is readable can read data
/// that arrives after its acknowledgement and before the stop lands, and be stopped half-way
/// through handling it. Whatever arrived after the app was last told must wake it after the
/// stop, even if it read it meanwhile.
@Suite("The wake race", .serialized)
final class WakeRaceTests: DaemonSuite {
    static let rounds = 1500

    @Test("data read between the acknowledgement and the stop wakes the app again: 1500 rounds, none lost")
    func readBetweenAcknowledgementAndStop() throws {
        // The app answers each message after handling it for 100 µs: a stop landing in that
        // time leaves it read and unanswered.
        let (app, remote) = try harness.launchAppWithVoIPSocket("phone", ["--echo", "100"])
        // An echoing app reports no events: the state says when it is asleep.
        try harness.suspend(app.name)

        var answers = Answers(remote)
        var generator = SystemRandomNumberGenerator()
        for round in 0..<Self.rounds {
            // Token A wakes the app (or reaches it while it is still on its way to sleep);
            // token B follows 0–400 µs after A's answer, around the acknowledgement and the stop.
            try remote.write("A\(round);")
            try answers.expect("A\(round);", round: round)
            spin(for: .microseconds(Int.random(in: 0...400, using: &generator)))
            try remote.write("B\(round);")
            try answers.expect("B\(round);", round: round)
        }
        let wakes = try harness.status("phone").wakes
        #expect(wakes >= Self.rounds / 2, "the rounds were meant to wake the app, not to find it running: \(wakes) wakes")
        try harness.waitForState("phone", .suspended)
    }

    @Test("a connection accepted, or a datagram read, between the acknowledgement and the stop wakes the app again: a TCP listener and an unconnected UDP socket, 1500 rounds each, none lost",
          arguments: ["tcp", "udp"])
    func servingSocketBetweenAcknowledgementAndStop(_ transport: String) throws {
        // The app accepts every connection its listener has, reads each, and answers after
        // 100 µs (for UDP: answers each datagram's sender): a stop landing after the accept
        // or the read leaves a message read, or about to be, and unanswered.
        let app = try harness.launchTestApp("phone", ["--echo", "100"])
        try app.send(.registerServing(socket: "sip", transport: transport))
        let port = try app.expect(\.listeningPort)
        try harness.suspend(app.name)

        let datagrams = try Socket.bindUDP()
        try Socket.connectDatagram(datagrams, host: "127.0.0.1", port: port)
        var generator = SystemRandomNumberGenerator()
        // Token A wakes the app; token B follows 0–400 µs after A's answer, each on a new
        // connection to the listener (or a datagram), around the acknowledgement and the stop.
        func exchange(_ token: String, round: Int) throws {
            if transport == "udp" {
                try datagrams.writeAll(Array(token.utf8))
                return try Self.expectAnswer(token, on: datagrams, round: round)
            }
            let connection = try Socket.connectTCP(host: "127.0.0.1", port: port)
            try connection.writeAll(Array(token.utf8))
            try Self.expectAnswer(token, on: connection, round: round)
        }
        do {
            for round in 0..<Self.rounds {
                try exchange("A\(round);", round: round)
                spin(for: .microseconds(Int.random(in: 0...400, using: &generator)))
                try exchange("B\(round);", round: round)
            }
        } catch let error as TimedOut {
            throw TimedOut(description: "\(error.description); voipd's log:\n\(harness.log.split(separator: "\n").suffix(60).joined(separator: "\n"))")
        }
        let wakes = try harness.status("phone").wakes
        #expect(wakes >= Self.rounds / 2, "the rounds were meant to wake the app, not to find it running: \(wakes) wakes")
        try harness.waitForState("phone", .suspended)
    }

    @Test("two sockets with data at the stop: the app is woken for one, and for the other at the next stop if it left it unread")
    func twoSocketsReadyAtOneStop() throws {
        let peer = try harness.makePeer()
        // The app reads nothing on its own, and acknowledges didEnterBackground when the
        // test says: both sockets have data when voipd arms them on the way to the stop.
        let app = try harness.launchTestApp("phone", ["--no-read", "--no-ack", "didEnterBackground"])
        var remotes: [PeerConnection] = []
        for name in ["sip-a", "sip-b"] {
            remotes.append(try app.registerVoIPSocket(name, connectedTo: peer))
        }
        try harness.control.command(.background, "phone")
        let entered = try app.expectEvent(.didEnterBackground)
        for remote in remotes { try remote.write("INVITE") }
        try app.send(.acknowledge(eventID: entered.id))
        // Woken for one; the other's readiness finds the app running. It leaves both unread:
        // the one it was not told of wakes it once it is stopped again.
        let first = try app.expectEvent(.voipSocketReadable)
        let second = try app.expectEvent(.voipSocketReadable)
        #expect([first.socket?.name, second.socket?.name] == ["sip-a", "sip-b"])
        try harness.waitForState("phone", .suspended)
        #expect(try harness.status("phone").wakes == 2)
    }

    /// Waits for `token` as the whole answer on `socket` (a connection or a connected UDP
    /// socket); a lost wake leaves it unanswered.
    static func expectAnswer(_ token: String, on socket: borrowing FileDescriptor, round: Int) throws {
        let deadline = Deadline(.seconds(10))
        var received: [UInt8] = []
        while received.count < token.utf8.count {
            guard waitReadable(socket.rawValue, deadline) else {
                throw TimedOut(description: "round \(round): \(token) never answered (lost wake-up); received \(String(decoding: received, as: UTF8.self).debugDescription)")
            }
            let bytes = try socket.read(upTo: 256)
            guard !bytes.isEmpty else { throw TimedOut(description: "round \(round): the app closed the connection") }
            received += bytes
        }
        #expect(String(decoding: received, as: UTF8.self) == token, "round \(round)")
    }

    /// The answers from the app, read as they come.
    struct Answers {
        let connection: PeerConnection
        var received = ""

        init(_ connection: PeerConnection) { self.connection = connection }

        /// Waits for `token` as the next answer; a lost wake leaves it unanswered.
        mutating func expect(_ token: String, round: Int) throws {
            let deadline = Deadline(.seconds(10))
            while received.count < token.count {
                guard !deadline.hasPassed, let text = try connection.read(timeout: .milliseconds(Int(deadline.remainingMilliseconds))) else {
                    throw TimedOut(description: "round \(round): \(token) never answered (lost wake-up); received \(received.debugDescription)")
                }
                guard !text.isEmpty else { throw TimedOut(description: "round \(round): the app closed the connection") }
                received += text
            }
            #expect(received.hasPrefix(token), "round \(round): expected \(token), got \(received)")
            received.removeFirst(token.count)
        }
    }
}

/// Busy-waits: the test's own timing of what it sends (a sleep would be rounded to the
/// timer slack, far above the microseconds asked for).
private func spin(for duration: Duration) {
    let end = MonotonicInstant.now + duration
    while MonotonicInstant.now < end {}
}
