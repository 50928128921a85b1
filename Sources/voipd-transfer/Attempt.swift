import Foundation
import FoundationNetworking
import VoipdSystem
import VoipdTransfers
import VoipdVocabulary

/// One attempt in flight: its order, its files and what has been seen of the response.
/// Touched on the agent's queue only.
final class Attempt {
    /// Why the agent cancelled the URLSession task itself, which decides the outcome.
    enum Cancellation {
        case stopped(keepPartial: Bool)
        /// The response is final and not 2xx: its body is not wanted.
        case unwantedStatus(HTTPResponseHead)
        case file(String)
        case rangeMismatch
        /// Nothing came or went for the order's `timeoutIntervalForRequest`.
        case idle
    }

    let order: AttemptOrder
    let files: DownloadFiles?
    /// Bytes of the partial file the Range request asked to keep.
    let requestedOffset: Int64
    var task: URLSessionTask?
    /// Its URLSession (the agent makes one per attempt), until the attempt is forgotten.
    var session: URLSession?
    /// Where the URLSession calls of this attempt are made, in order (``TransferAgent``).
    let calls = DispatchQueue(label: "voipd-transfer.attempt")
    /// A download's partial file, open and locked from the attempt's start until the
    /// response says how to write it; then the writer's.
    var partial: FileDescriptor?
    var response: HTTPResponseHead?
    var output: PartialFileWriter?
    var resumedFrom: Int64 = 0
    var progress = TransferProgress()
    var lastProgressReport = MonotonicInstant.origin
    /// When a byte, or the response, last came or went (the request timeout counts from it).
    var lastActivity = MonotonicInstant.now
    /// The request timeout's timer (``TransferAgent``'s idle watch).
    var idleTimer: (any DispatchSourceTimer)?
    var cancellation: Cancellation?

    init(order: AttemptOrder, files: DownloadFiles?, requestedOffset: Int64) {
        self.order = order
        self.files = files
        self.requestedOffset = requestedOffset
    }

    /// Whether a progress report is due (at most one per the order's interval).
    func progressDue(now: MonotonicInstant) -> Bool {
        now - lastProgressReport >= .seconds(order.progressInterval)
    }
}
