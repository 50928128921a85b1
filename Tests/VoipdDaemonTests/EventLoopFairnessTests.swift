import Glibc
import Testing
@testable import VoipdDaemon
import VoipdSystem

/// More registrations ready than one `epoll_wait` of the held sockets' set takes (64): the
/// kernel hands its ready list out in order, a level-triggered registration (the set of the
/// others, a control connection) going back to its end once reported and an edge-triggered
/// one (a held socket) when something new arrives, so nothing waits more than a few waits.
@Suite("The loop with more ready than one wait takes")
struct EventLoopFairnessTests {
    /// `count` socket pairs, the near end of each registered in `loop` as `source(i)` with
    /// `events`; returns the far ends, to write to.
    static func register(_ count: Int, in loop: EventLoop, _ events: EpollEvents, _ source: (UInt64) -> EventSource,
                         keeping near: inout [DescriptorBox]) throws -> [DescriptorBox] {
        var far: [DescriptorBox] = []
        for index in 0..<count {
            let pair = try Socket.pair()
            _ = try loop.register(pair.first, events, source(UInt64(index)))
            near.append(DescriptorBox(pair.first))
            far.append(DescriptorBox(pair.second))
        }
        return far
    }

    static func write(_ far: DescriptorBox) {
        var byte: UInt8 = 0x41
        #expect(Glibc.write(far.rawValue, &byte, 1) == 1)
    }

    @Test("200 held sockets that never stop receiving and a control connection that never stops asking: each wait takes at most 64 held sockets, the connection is served at least every 4 waits and so is every held socket")
    func floodStarvesNothing() throws {
        let loop = try EventLoop()
        var near: [DescriptorBox] = []
        // As `hold` and an accepted connection register them.
        let held = try Self.register(200, in: loop, [.readable, .readHangup, .edgeTriggered], { .heldSocket($0) }, keeping: &near)
        let connection = try Self.register(1, in: loop, .readable, { .client($0) }, keeping: &near)
        for far in held { Self.write(far) }
        // Ready last: behind every held socket in the ready list.
        Self.write(connection[0])

        var heldServed = Array(repeating: [Int](), count: held.count)
        var connectionServed: [Int] = []
        let waits = 16
        for turn in 0..<waits {
            var heldThisTurn = 0
            loop.wait(timeoutMilliseconds: 0) { source, _ in
                switch source {
                case .heldSocket(let id):
                    heldThisTurn += 1
                    heldServed[Int(id)].append(turn)
                    // More data: a new edge, and the socket ready again.
                    Self.write(held[Int(id)])
                case .client:
                    connectionServed.append(turn)
                default:
                    Issue.record("\(source) reported")
                }
            }
            #expect(heldThisTurn <= 64)
        }
        // 201 ready, 64 a wait: each is reached within 4 waits.
        let bound = (held.count + 1 + 63) / 64
        func gaps(_ turns: [Int]) -> [Int] { zip([-1] + turns, turns + [waits]).map { $1 - $0 } }
        #expect(gaps(connectionServed).allSatisfy { $0 <= bound }, "the connection served at waits \(connectionServed)")
        for (id, turns) in heldServed.enumerated() {
            #expect(gaps(turns).allSatisfy { $0 <= bound }, "held socket \(id) served at waits \(turns)")
        }
    }

    @Test("a wait that took as many held sockets as it may (64 of 100 ready) does not count as the look before the next request: that look takes the 36 others")
    func fullBatchIsNotALook() throws {
        let loop = try EventLoop()
        var near: [DescriptorBox] = []
        let held = try Self.register(100, in: loop, [.readable, .readHangup, .edgeTriggered], { .heldSocket($0) }, keeping: &near)
        for far in held { Self.write(far) }
        var first = 0
        loop.wait(timeoutMilliseconds: 0) { _, _ in first += 1 }
        #expect(first == 64)
        #expect(!loop.urgentLooked, "36 held sockets ready would wait behind the requests of this batch")
        var urgent = 0
        loop.takeUrgent { _, _ in urgent += 1 }
        #expect(urgent == 36)
        #expect(loop.urgentLooked)
        // Nothing left: a wait that takes less than it may is the look.
        loop.wait(timeoutMilliseconds: 0) { _, _ in Issue.record("nothing is ready") }
        #expect(loop.urgentLooked)
    }

    @Test("a control connection's request comes out of the loop's own wait, not out of a second look at the nested set of the others")
    func requestInTheWaitedSet() throws {
        let loop = try EventLoop()
        var near: [DescriptorBox] = []
        let connection = try Self.register(1, in: loop, .readable, { .client($0) }, keeping: &near)
        Self.write(connection[0])
        var tokens: [UInt64] = []
        loop.heldSet.wait(timeoutMilliseconds: 0) { tokens.append($0.token) }
        var served: [UInt64] = []
        loop.wait(timeoutMilliseconds: 0) { source, _ in
            if case .client(let id) = source { served.append(id) }
        }
        #expect(served == [0])
        #expect(tokens.count == 1, "one registration ready in the waited set: the connection itself")
        var others: [UInt64] = []
        loop.others.wait(timeoutMilliseconds: 0) { others.append($0.token) }
        #expect(others.isEmpty)
    }

    @Test("a held socket ready behind 100 connections with a request each is taken by the first look between two requests, and the batch serves held sockets first")
    func heldSocketBehindConnections() throws {
        let loop = try EventLoop()
        var near: [DescriptorBox] = []
        let connections = try Self.register(100, in: loop, .readable, { .client($0) }, keeping: &near)
        for far in connections { Self.write(far) }
        let held = try Self.register(1, in: loop, [.readable, .readHangup, .edgeTriggered], { .heldSocket($0 + 1000) }, keeping: &near)
        Self.write(held[0])
        var urgent: [UInt64] = []
        loop.takeUrgent { source, _ in
            if case .heldSocket(let id) = source { urgent.append(id) } else { Issue.record("\(source) taken by the look") }
        }
        #expect(urgent == [1000])

        // Ready behind three connections in another loop: the wait serves it first.
        let small = try EventLoop()
        let three = try Self.register(3, in: small, .readable, { .client($0) }, keeping: &near)
        for far in three { Self.write(far) }
        let last = try Self.register(1, in: small, [.readable, .readHangup, .edgeTriggered], { .heldSocket($0 + 1000) }, keeping: &near)
        Self.write(last[0])
        var order: [String] = []
        small.wait(timeoutMilliseconds: 0) { source, _ in
            if case .heldSocket = source { order.append("held") } else { order.append("client") }
        }
        #expect(order == ["held", "client", "client", "client"])
    }
}
