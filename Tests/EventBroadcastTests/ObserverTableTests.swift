import EventBroadcast
import Testing

@Suite struct ObserverTableTests {
    @Test func tokensAreUniqueAndRemoveOnlyTheirOwnObserver() {
        var table = ObserverTable<String>()
        let first = table.add("a")
        let second = table.add("b")
        #expect(first != second)
        #expect(Set(table.all) == ["a", "b"] && table.count == 2)
        #expect(table.remove(first) == "a")
        #expect(table.remove(first) == nil, "a token removes once")
        #expect(Array(table.all) == ["b"])
        // A token is never given again, even after its observer left.
        let third = table.add("c")
        #expect(third != first && third != second)
    }

    @Test func removeAllHandsBackEveryObserverAndEmptiesTheTable() {
        var table = ObserverTable<Int>()
        for value in 1...5 { _ = table.add(value) }
        #expect(table.removeAll().sorted() == [1, 2, 3, 4, 5])
        #expect(table.count == 0 && table.all.isEmpty)
        #expect(table.removeAll().isEmpty)
    }
}
