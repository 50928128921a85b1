import Glibc
import Testing
@testable import VoipdDaemon
import VoipdSystem

/// What a service manager passes (`$LISTEN_PID`, `$LISTEN_FDS`, `$LISTEN_FDNAMES`), read as
/// voipd reads it at start: on descriptors of this process moved to free numbers, since 3
/// and up belong to the test runner.
@Suite("Descriptors a service manager passed", .serialized)
struct ActivatedDescriptorsTests {
    @Test("each name says what its descriptor is; a number that is not open is skipped; all are close-on-exec, and closed unless taken")
    func passedDescriptors() throws {
        let control = try Socket.pair()
        let voip = try Socket.pair()
        let record = try FileDescriptor.memoryFile(named: "record")
        let first = try Self.freeRun(of: 4)
        // Passed without close-on-exec, as a service manager does; the fourth is not open.
        for (offset, source) in [control.first.rawValue, voip.first.rawValue, record.rawValue].enumerated() {
            #expect(dup2(source, first + CInt(offset)) == first + CInt(offset))
        }
        let environment = ["LISTEN_PID": "\(getpid())", "LISTEN_FDS": "4", "LISTEN_FDNAMES": "control:phone/sip:phone/#record:phone/#process"]
        var passed: ActivatedDescriptors? = ActivatedDescriptors(environment: environment, firstDescriptor: first)
        #expect(passed?.entries == [.controlSocket, .heldSocket(app: "phone", name: "sip"), .record(app: "phone")])
        for number in first..<first + 3 { #expect(fcntl(number, F_GETFD) == FD_CLOEXEC, "descriptor \(number) is close-on-exec") }
        guard let taken = passed?.takeControlSocket() else {
            Issue.record("no control socket")
            return
        }
        #expect(taken.rawValue == first)
        #expect(passed?.takeControlSocket()?.rawValue == nil, "taken once")
        passed = nil
        #expect(fcntl(first, F_GETFD) == FD_CLOEXEC, "the one taken stays open")
        for number in first + 1..<first + 3 { #expect(fcntl(number, F_GETFD) == -1 && errno == EBADF, "descriptor \(number) is closed") }
    }

    @Test("descriptors passed to another process (LISTEN_PID), or none, are left alone")
    func notOurs() throws {
        let pipe = try makePipe()
        let first = try Self.freeRun(of: 1)
        #expect(dup2(pipe.first.rawValue, first) == first)
        defer { close(first) }
        for environment in [["LISTEN_PID": "\(getpid() + 1)", "LISTEN_FDS": "1"], ["LISTEN_PID": "\(getpid())", "LISTEN_FDS": "0"],
                            ["LISTEN_FDS": "1"], ["LISTEN_PID": "\(getpid())", "LISTEN_FDS": "many"]] {
            let passed = ActivatedDescriptors(environment: environment, firstDescriptor: first)
            #expect(passed.entries.isEmpty, "\(environment)")
        }
        #expect(fcntl(first, F_GETFD) == 0, "not taken: still open, not made close-on-exec")
    }

    @Test("names: the control socket, held sockets, records, processes, and what voipd never gives")
    func names() {
        func entry(_ name: String, alone: Bool = false, socket: Bool = true) -> ActivatedDescriptors.Entry {
            ActivatedDescriptors.entry(named: name, passedAlone: alone) { socket }
        }
        #expect(entry("control") == .controlSocket)
        #expect(entry("voipd.socket", alone: true) == .controlSocket, "a lone socket under its unit's name")
        #expect(entry("voipd.socket", alone: true, socket: false) == .unknown(name: "voipd.socket"))
        #expect(entry("voipd.socket") == .unknown(name: "voipd.socket"), "not alone: not the control socket")
        #expect(entry("phone/sip") == .heldSocket(app: "phone", name: "sip"))
        #expect(entry("phone/#record") == .record(app: "phone"))
        #expect(entry("phone/#process") == .process(app: "phone"))
        #expect(entry("phone/sip/2") == .heldSocket(app: "phone", name: "sip/2"), "the app is up to the first slash")
        for name in ["/sip", "phone/", "", "unknown"] { #expect(entry(name) == .unknown(name: name)) }
    }

    /// The first of `count` consecutive descriptor numbers not open in this process.
    static func freeRun(of count: Int) throws -> CInt {
        var first: CInt = 900
        while first < 60_000 {
            if (first..<first + CInt(count)).allSatisfy({ fcntl($0, F_GETFD) == -1 }) { return first }
            first += CInt(count)
        }
        throw Errno(EMFILE, call: "no free run of descriptors")
    }
}
