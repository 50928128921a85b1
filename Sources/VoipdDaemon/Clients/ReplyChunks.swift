/// How a list too long for one reply frame is split: the items in order, in as few chunks as
/// fit, each chunk's items costing at most `budget` bytes by `cost`. An item that costs more
/// than the budget goes in a chunk of its own (its frame is then refused when it is sent,
/// and the client is told). Never an empty chunk, except the only one of an empty list.
func replyChunks<Item>(of items: [Item], budget: Int, cost: (Item) -> Int) -> [[Item]] {
    var chunks: [[Item]] = []
    var chunk: [Item] = []
    var size = 0
    for item in items {
        let itemCost = cost(item)
        if !chunk.isEmpty && size + itemCost > budget {
            chunks.append(chunk)
            chunk.removeAll()
            size = 0
        }
        chunk.append(item)
        size += itemCost
    }
    chunks.append(chunk)
    return chunks
}
