import VoipdSystem

/// How to start an app again: what `voipctl launch` (or a manifest) said.
final class LaunchSpecification {
    let arguments: [String]
    let environment: [String]
    let workingDirectory: String?
    /// The account it runs as (nil: voipd's own).
    let account: ResolvedManifest.Account?
    /// Where its output and errors go (descriptors owned here, closed with it), or voipd's
    /// own when nil.
    let standardOutput: FileDescriptor?
    let standardError: FileDescriptor?

    init(arguments: [String], environment: [String], workingDirectory: String?, account: ResolvedManifest.Account? = nil,
         standardOutput: consuming FileDescriptor? = nil, standardError: consuming FileDescriptor? = nil) {
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.account = account
        self.standardOutput = standardOutput
        self.standardError = standardError
    }

    /// The numbers of the output and error descriptors (borrowed: still owned here).
    var standardOutputNumber: CInt? {
        switch standardOutput {
        case .some(let descriptor): return descriptor.rawValue
        case .none: return nil
        }
    }

    var standardErrorNumber: CInt? {
        switch standardError {
        case .some(let descriptor): return descriptor.rawValue
        case .none: return nil
        }
    }

    /// Lends `body` the output and error descriptors it holds.
    func forEachOutput<E: Error>(_ body: (borrowing FileDescriptor) throws(E) -> Void) throws(E) {
        switch standardOutput {
        case .some(let descriptor): try body(descriptor)
        case .none: break
        }
        switch standardError {
        case .some(let descriptor): try body(descriptor)
        case .none: break
        }
    }
}
