import Glibc
import SIP
import VoipdSystem

/// The softphone's listening TCP socket (`--listen`): where a registrar that does not reuse
/// the phone's own connection opens a new one to deliver a request. The object owns the
/// descriptor and closes it when it goes.
///
/// Unlike the other SIP sockets it is non-blocking, so that an accept() after a connection
/// vanished cannot block: voipd, which may hold a duplicate (and shares the file status
/// flags), only watches a listening socket and never accepts on it.
final class TCPListener {
    let descriptor: FileDescriptor
    var fd: Int32 { descriptor.rawValue }
    /// The address it listens on, with the port the kernel chose for port 0.
    let localAddress: SIPSocketAddress

    /// Listens on `address` (port 0 for an ephemeral port).
    convenience init(address: SIPSocketAddress, backlog: Int32 = 16) throws(NetworkError) {
        do throws(Errno) {
            try self.init(owning: Socket.listenTCP(at: address, backlog: backlog, nonBlocking: true))
        } catch {
            throw NetworkError(error)
        }
    }

    /// Takes ownership of a listening socket (one voipd handed back).
    convenience init(adopting fd: Int32) throws(NetworkError) {
        let descriptor = FileDescriptor(adopting: fd)
        do throws(Errno) {
            try descriptor.setNonBlocking()
            try self.init(owning: descriptor)
        } catch {
            throw NetworkError(error)
        }
    }

    private init(owning descriptor: consuming FileDescriptor) throws(Errno) {
        localAddress = try Socket.inetLocalEndpoint(of: descriptor)
        self.descriptor = descriptor
    }

    /// Accepts every connection waiting now, with Nagle's algorithm off.
    func acceptPending() throws(NetworkError) -> [TCPConnection] {
        var accepted: [TCPConnection] = []
        while true {
            // Close-on-exec from the start (accept4), and blocking, like the connections the
            // softphone opens itself.
            let connection: FileDescriptor
            do throws(Errno) {
                guard case .processed(let next) = try Socket.accept(descriptor, nonBlocking: false) else { return accepted }
                connection = next
            } catch .protocolError {
                // Gone before it was accepted: nothing to accept now.
                return accepted
            } catch {
                throw NetworkError(error)
            }
            do throws(Errno) {
                try Socket.setNoDelay(connection)
            } catch {
                throw NetworkError(error)
            }
            accepted.append(TCPConnection(descriptor: connection))
        }
    }
}
