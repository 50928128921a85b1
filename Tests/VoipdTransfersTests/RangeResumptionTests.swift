import Testing
import VoipdTransfers

/// Range requests validated by If-Range: when a download can resume, and what a response
/// to a resumed request means.
@Suite("Range resumption")
struct RangeResumptionTests {
    @Test("a strong entity tag with Accept-Ranges is the validator")
    func entityTag() {
        let head = HTTPResponseHead(status: 200, headers: ["Accept-Ranges": "bytes", "ETag": "\"6b04-4000\"", "Last-Modified": "Mon, 23 Nov 2026 19:59:27 GMT"])
        #expect(RangeResumption.validator(for: head) == .entityTag("\"6b04-4000\""))
        #expect(RangeResumption.requestHeaders(offset: 1234, validator: .entityTag("\"6b04-4000\"")) ==
            [HTTPHeader("Range", "bytes=1234-"), HTTPHeader("If-Range", "\"6b04-4000\"")])
    }

    @Test("a weak entity tag cannot validate a range; Last-Modified can")
    func weakTag() {
        let head = HTTPResponseHead(status: 200, headers: ["accept-ranges": "bytes", "etag": "W/\"x\"", "last-modified": "Mon, 23 Nov 2026 19:59:27 GMT"])
        #expect(RangeResumption.validator(for: head) == .lastModified("Mon, 23 Nov 2026 19:59:27 GMT"))
        let weakOnly = HTTPResponseHead(status: 200, headers: ["Accept-Ranges": "bytes", "ETag": "W/\"x\""])
        #expect(RangeResumption.validator(for: weakOnly) == nil)
    }

    @Test("no resumption without Accept-Ranges, with a re-encoded body, or from an error response")
    func notResumable() {
        #expect(RangeResumption.validator(for: HTTPResponseHead(status: 200, headers: ["ETag": "\"a\""])) == nil)
        #expect(RangeResumption.validator(for: HTTPResponseHead(status: 200, headers: ["Accept-Ranges": "none", "ETag": "\"a\""])) == nil)
        #expect(RangeResumption.validator(for: HTTPResponseHead(status: 200, headers: ["Accept-Ranges": "bytes", "ETag": "\"a\"", "Content-Encoding": "gzip"])) == nil)
        #expect(RangeResumption.validator(for: HTTPResponseHead(status: 404, headers: ["Accept-Ranges": "bytes", "ETag": "\"a\""])) == nil)
        // A 206 shows ranges are served even without the header.
        #expect(RangeResumption.validator(for: HTTPResponseHead(status: 206, headers: ["ETag": "\"a\""])) == .entityTag("\"a\""))
    }

    @Test("a 206 continuing the file is appended; the whole length comes from Content-Range")
    func append() {
        let head = HTTPResponseHead(status: 206, headers: ["Content-Range": "bytes 1000-1999/2000", "Content-Length": "1000"])
        #expect(RangeResumption.decide(head, requestedOffset: 1000) == .append(total: 2000))
        let unknown = HTTPResponseHead(status: 206, headers: ["Content-Range": "bytes 1000-1999/*"])
        #expect(RangeResumption.decide(unknown, requestedOffset: 1000) == .append(total: nil))
    }

    @Test("a 200 to a Range request (validator changed, ranges ignored) restarts the file")
    func restart() {
        let head = HTTPResponseHead(status: 200, headers: ["Content-Length": "3000"])
        #expect(RangeResumption.decide(head, requestedOffset: 1000) == .restart(total: 3000))
        #expect(RangeResumption.decide(head, requestedOffset: 0) == .restart(total: 3000))
    }

    @Test("a 206 that does not continue the file, or is unasked for, is a mismatch")
    func mismatch() {
        #expect(RangeResumption.decide(HTTPResponseHead(status: 206, headers: ["Content-Range": "bytes 0-999/2000"]), requestedOffset: 1000) == .mismatch)
        #expect(RangeResumption.decide(HTTPResponseHead(status: 206, headers: ["Content-Range": "bytes 0-999/2000"]), requestedOffset: 0) == .mismatch)
        #expect(RangeResumption.decide(HTTPResponseHead(status: 206), requestedOffset: 1000) == .mismatch)
    }

    @Test("Content-Range parsing", arguments: [
        ("bytes 0-0/1", true), ("bytes 5-9/10", true), ("bytes 5-9/*", true), (" bytes 5-9/10 ", true),
        ("bytes 9-5/10", false), ("bytes 5-9/9", false), ("items 5-9/10", false), ("bytes */10", false), ("bytes 5-/10", false),
    ])
    func contentRange(value: String, valid: Bool) {
        #expect((ContentRange(value) != nil) == valid)
    }
}
