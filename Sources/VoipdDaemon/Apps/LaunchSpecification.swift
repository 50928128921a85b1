import VoipdSystem

/// How to start an app: its command line, environment, directory and account. The part of a
/// ``LaunchSpecification`` that the service manager's store, the state file and an in-place
/// upgrade keep as it is (``StoredApp``, ``DaemonSnapshot``).
struct LaunchCommand: Codable, Equatable {
    var arguments: [String]
    var environment: [String]
    var workingDirectory: String?
    /// The account it runs as (nil: voipd's own).
    var account: ResolvedManifest.Account?
    /// `voipctl launch --adopt` rules, as given: kept with the command so that a voipd after
    /// a restart or an in-place upgrade adopts the program by them again. A manifest's rules
    /// are not here: the manifest is read again.
    var adopt: [String]? = nil
}

/// How to start an app again: what `voipctl launch` (or a manifest) said, and where the
/// app's output goes. Its fields read as the command's (`specification.arguments`).
@dynamicMemberLookup
final class LaunchSpecification {
    let command: LaunchCommand
    /// Where its output and errors go (descriptors owned here, closed with it), or voipd's
    /// own when nil.
    let standardOutput: FileDescriptor?
    let standardError: FileDescriptor?

    init(_ command: LaunchCommand, standardOutput: consuming FileDescriptor? = nil, standardError: consuming FileDescriptor? = nil) {
        self.command = command
        self.standardOutput = standardOutput
        self.standardError = standardError
    }

    subscript<Value>(dynamicMember field: KeyPath<LaunchCommand, Value>) -> Value { command[keyPath: field] }

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
