// The types of the client library's API, so that `import VoipClient` is all an app needs:
// the shared vocabulary (states, events, readiness, termination reasons: VoipdVocabulary),
// status records and requests (VoipdProtocol), and the owned descriptor type sockets come
// back as (VoipdSystem). The lifecycle machine itself (VoipdLifecycle) is voipd's alone.
@_exported import VoipdVocabulary
@_exported import VoipdProtocol
@_exported import struct VoipdSystem.FileDescriptor
// Background transfers' records (docs/TRANSFERS.md): what a task's completion, challenge
// and progress say, and a session's options. The engine itself is voipd's alone.
@_exported import struct VoipdTransfers.TransferCompletion
@_exported import struct VoipdTransfers.TransferProgress
@_exported import struct VoipdTransfers.TransferOptions
@_exported import struct VoipdTransfers.AuthenticationChallenge
@_exported import enum VoipdTransfers.ChallengeAnswer
@_exported import enum VoipdTransfers.TransferError
@_exported import struct VoipdTransfers.NetworkFailure
@_exported import struct VoipdTransfers.HTTPHeaders
@_exported import struct VoipdTransfers.HTTPHeader
@_exported import struct VoipdTransfers.HTTPResponseHead
@_exported import enum VoipdTransfers.PowerSource
