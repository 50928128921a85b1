import Glibc
import VoipdProtocol
import VoipdSystem

extension ProtocolError {
    /// The error reply for a failed system call: `outOfResources` when voipd is out of
    /// descriptors or memory (EMFILE, ENFILE, ENOMEM, ENOBUFS), else `internalError`.
    public init(systemError error: any Error, _ context: String) {
        if let errno = error as? Errno, errno.isResourceExhaustion {
            self.init(.outOfResources, "\(context): \(error)")
        } else {
            self.init(.internalError, "\(context): \(error)")
        }
    }
}
