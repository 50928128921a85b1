import CVoipd
import Glibc

/// A non-blocking datagram socket connected to a socket path (the sd_notify protocol's
/// transport). A path starting with "@" is in the abstract namespace.
public func connectDatagram(to path: String) throws -> FileDescriptor {
    let fd = try Socket.make(domain: AF_UNIX, type: Socket.datagramType, nonBlocking: true)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    var pathBytes = Array(path.utf8)
    if pathBytes.first == UInt8(ascii: "@") { pathBytes[0] = 0 }
    guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw Errno(ENAMETOOLONG, call: "notify socket") }
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: pathBytes) }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count + (pathBytes.first == 0 ? 0 : 1))
    try fd.connect(address: &address, length: length)
    return fd
}

extension FileDescriptor {
    fileprivate borrowing func connect(address: inout sockaddr_un, length: socklen_t) throws {
        _ = try withUnsafePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                try valueOrErrno("connect(notify socket)") { Glibc.connect(rawValue, sa, length) }
            }
        }
    }
}
