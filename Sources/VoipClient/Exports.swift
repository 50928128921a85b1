// The types of the client library's API, so that `import VoipClient` is all an app needs:
// states, events and readiness (VoipdLifecycle), status records (VoipdProtocol), and the
// owned descriptor type sockets come back as (VoipdSystem).
@_exported import VoipdLifecycle
@_exported import VoipdProtocol
@_exported import struct VoipdSystem.FileDescriptor
