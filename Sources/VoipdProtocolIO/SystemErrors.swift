import Glibc
import VoipdProtocol
import VoipdSystem

extension ProtocolError {
    /// The error reply for a failed system call: `outOfResources` when voipd is out of
    /// descriptors or memory (EMFILE, ENFILE, ENOMEM, ENOBUFS), else `internalError`.
    public init(systemError error: any Error, _ context: String) {
        let resources: Set<CInt> = [EMFILE, ENFILE, ENOMEM, ENOBUFS]
        if let errno = error as? Errno, resources.contains(errno.rawValue) {
            self.init(.outOfResources, "\(context): \(error)")
        } else {
            self.init(.internalError, "\(context): \(error)")
        }
    }
}
