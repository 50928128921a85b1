// The types of the client library's API, so that `import VoipClient` is all an app needs:
// the shared vocabulary (states, events, readiness, termination reasons: VoipdVocabulary),
// status records and requests (VoipdProtocol), and the owned descriptor type sockets come
// back as (VoipdSystem). The lifecycle machine itself (VoipdLifecycle) is voipd's alone.
@_exported import VoipdVocabulary
@_exported import VoipdProtocol
@_exported import struct VoipdSystem.FileDescriptor
