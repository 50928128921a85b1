import Testing
import VoipdTestSupport
import VoipdTransfers

extension NginxServer {
    /// Serves a new file of random bytes at `/name` and returns its SHA-256.
    @discardableResult
    func serve(_ name: String, size: Int) throws -> String {
        let path = www + "/" + name
        try makeRandomFile(path, size: size)
        return try sha256(path)
    }
}

extension TransferRig {
    /// A download of a new file of `size` random bytes, `name`, from nginx's rate-limited
    /// `/slow/`, caught in the middle: once `bytes` of it have arrived. Its SHA-256, where
    /// it goes, and its task.
    func slowDownload(_ name: String, size: Int, from nginx: NginxServer, receivedAtLeast bytes: Int64) throws
        -> (digest: String, destination: String, task: TransferTaskID) {
        let digest = try nginx.serve(name, size: size)
        let destination = downloads + "/" + name
        let task = try create(.download(nginx.baseURL + "/slow/" + name, to: destination))
        try waitForProgress(of: task, atLeast: bytes)
        return (digest, destination, task)
    }
}
