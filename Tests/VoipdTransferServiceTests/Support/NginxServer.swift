import VoipdTestSupport

extension NginxServer {
    /// Serves a new file of random bytes at `/name` and returns its SHA-256.
    @discardableResult
    func serve(_ name: String, size: Int) throws -> String {
        let path = www + "/" + name
        try makeRandomFile(path, size: size)
        return try sha256(path)
    }
}
