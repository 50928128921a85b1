import Testing
import VoipdTestSupport
import VoipdTransfers

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
