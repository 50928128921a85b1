import SIP
import VoipdTestSupport

/// The SIP server a measurement runs through: the embedded `SIPRegistrar` (on a thread
/// of the bench, started from the calling thread, whose CPU mask its thread inherits) or
/// Kamailio (a child process, through ``GuardedExec`` so that it gets SIGTERM if the bench
/// dies; its log in a file).
final class RegistrarUnderTest {
    let host = "127.0.0.1"
    let port: UInt16
    private let embedded: SIPRegistrar?
    private let kamailio: KamailioServer?

    init(_ kind: SIPOptions.Registrar, kamailioBinary: String) throws {
        switch kind {
        case .embedded:
            // No observer: nothing but the routing itself on its thread.
            let registrar = try SIPRegistrar(host: host)
            try registrar.start()
            (embedded, kamailio, port) = (registrar, nil, registrar.port)
        case .kamailio:
            let server = try KamailioServer(binary: kamailioBinary, wrap: GuardedExec.wrap)
            (embedded, kamailio, port) = (nil, server, server.port)
        }
    }

    var address: String { "\(host):\(port)" }

    /// The end of Kamailio's log, for a failure message.
    var logTail: String? { kamailio.map { String($0.log.suffix(2000)) } }

    func stop() {
        embedded?.stop()
        kamailio?.stop()
    }
}
