import Glibc

/// Finds sockets by their inode among the descriptors of a program's processes and takes a
/// copy of each (`pidfd_getfd`): how a restarted voipd gets back, without the app's help,
/// the VoIP sockets an app it left suspended still holds. The program keeps its
/// descriptors; data that arrives is readable from either copy.
public enum SocketInodeSearch {
    /// What a search did not get.
    public struct Outcome: Sendable, Equatable {
        /// The inodes no descriptor was found for, or none could be copied.
        public var missing: Set<UInt64>
        /// Why each process that could not be looked at or copied from failed (`EPERM`: no
        /// ptrace access, see ``YamaPtraceScope``; `ESRCH`: it ended), the first error of each.
        public var errors: [String]
    }

    /// Looks through the descriptors of `processes` (the root first: `root`'s pid, reached
    /// through `root`; any other through a pidfd opened now), at most `descriptorLimit` of them
    /// in all, for each inode in `inodes`, and calls `take` with a copy of the first
    /// descriptor found for it. A copy is checked to be that socket (a descriptor closed and
    /// reused since the scan, or a pid reused, gives another inode, and is not kept): which
    /// process it came from does not matter, an inode names one socket.
    public static func copies(of inodes: Set<UInt64>, in processes: [pid_t], root: borrowing PidFd, descriptorLimit: Int,
                              _ take: (UInt64, consuming FileDescriptor) -> Void) -> Outcome {
        var outcome = Outcome(missing: inodes, errors: [])
        var budget = descriptorLimit
        for pid in processes where !outcome.missing.isEmpty && budget > 0 {
            let scan: SocketDescriptorScan.Result
            do {
                scan = try SocketDescriptorScan.scan(pid, limit: budget)
            } catch {
                outcome.errors.append("pid \(pid): \(error)")
                continue
            }
            budget -= scan.examined
            var failure: (any Error)?
            for entry in scan.sockets where outcome.missing.contains(entry.inode) {
                do {
                    let copy = pid == root.pid ? try root.duplicateDescriptor(entry.location.descriptor)
                        : try PidFd(pid: pid).duplicateDescriptor(entry.location.descriptor)
                    guard try Socket.inode(of: copy) == entry.inode else { continue }
                    outcome.missing.remove(entry.inode)
                    take(entry.inode, copy)
                } catch {
                    if failure == nil { failure = error }
                }
            }
            if let failure { outcome.errors.append("pid \(pid): \(failure)") }
        }
        return outcome
    }
}
