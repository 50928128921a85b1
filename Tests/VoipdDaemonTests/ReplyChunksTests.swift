import Testing
@testable import VoipdDaemon
import VoipdProtocol

/// A list too long for one frame goes in several replies (`"more": true` on all but the
/// last); the client concatenates them.
@Suite("Replies split over several frames")
struct ReplyChunksTests {
    @Test("in order, as few chunks as fit the budget, never an empty one; an item over the budget goes alone")
    func chunks() {
        #expect(replyChunks(of: [Int](), budget: 10) { $0 } == [[]], "an empty list is one empty reply")
        #expect(replyChunks(of: [3, 3, 4], budget: 10) { $0 } == [[3, 3, 4]], "exactly the budget fits")
        #expect(replyChunks(of: [3, 3, 5], budget: 10) { $0 } == [[3, 3], [5]])
        #expect(replyChunks(of: [2, 25, 2], budget: 10) { $0 } == [[2], [25], [2]])
        #expect(replyChunks(of: [25], budget: 10) { $0 } == [[25]])
        let items = Array(1...500)
        let chunks = replyChunks(of: items, budget: 100) { $0 % 40 }
        #expect(chunks.flatMap { $0 } == items)
        #expect(chunks.allSatisfy { !$0.isEmpty && ($0.count == 1 || $0.reduce(0) { $0 + $1 % 40 } <= 100) })
    }

    @Test("each reply of a long list, as voipd encodes it, fits in a frame")
    func repliesFitFrames() throws {
        let codec = WireCodec()
        let items = (0..<5_000).map { "app-\($0)-" + String(repeating: "x", count: $0 % 97) }
        let budget = Frame.maximumSize - Frame.headerSize - 512
        let chunks = replyChunks(of: items, budget: budget) { codec.encodedSize($0) + 1 }
        #expect(chunks.count > 2)
        for chunk in chunks {
            #expect(codec.encodedSize(Reply(id: UInt64.max, result: chunk, more: true)) <= Frame.maximumSize - Frame.headerSize)
        }
    }
}
