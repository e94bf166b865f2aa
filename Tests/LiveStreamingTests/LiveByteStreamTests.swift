import LiveStreaming
import Synchronization
import Testing

/// The backlog readers start from, on bytes: priming, skipping, alignment, the header.
@Suite(.timeLimit(.minutes(1))) struct LiveByteStreamTests {
    /// `count` bytes counting up from `from` (mod 256), so a byte says where it was.
    func counting(_ from: Int, _ count: Int) -> [UInt8] { (from..<from + count).map { UInt8($0 & 0xFF) } }

    func readAll(_ reader: LiveByteStream.Reader, maximum: Int = 1 << 20) -> [UInt8] {
        var out: [UInt8] = []
        while case .bytes(let bytes) = reader.read(maximum: maximum) { out += bytes }
        return out
    }

    @Test func aNewReaderGetsTheHeaderThenThePrimedBacklogThenWhatComes() {
        let stream = LiveByteStream(configuration: .init(capacity: 1000, primeBytes: 100, alignment: 4, startPoints: .marked), header: [9, 9, 9])
        stream.append(counting(0, 400))  // one append: one sync point, at 0
        for start in stride(from: 400, to: 800, by: 40) { stream.append(counting(start, 40)) }
        let reader = stream.makeReader()
        let first = readAll(reader)
        // The newest sync point at least 100 bytes before the edge (800): 680.
        #expect(Array(first.prefix(3)) == [9, 9, 9])
        #expect(Array(first.dropFirst(3)) == counting(680, 120))
        #expect(reader.read(maximum: 10) == .empty)
        stream.append(counting(800, 40))
        #expect(readAll(reader) == counting(800, 40))
        stream.finish()
        #expect(reader.read(maximum: 10) == .ended)
    }

    @Test func pcmReadersStartAtAnyFrameThePrimeReaches() {
        let stream = LiveByteStream(configuration: .init(capacity: 1000, primeBytes: 102, alignment: 4))
        stream.append(counting(0, 800))
        // 102 bytes before the edge, down to a frame: 696.
        #expect(readAll(stream.makeReader()) == counting(696, 104))
        let unprimed = LiveByteStream(configuration: .init(capacity: 1000, primeBytes: 0, alignment: 4))
        unprimed.append(counting(0, 800))
        #expect(readAll(unprimed.makeReader()).isEmpty)
    }

    @Test func aReaderThatFallsBehindSkipsToTheOldestSyncPointKept() {
        let stream = LiveByteStream(configuration: .init(capacity: 200, primeBytes: 0, alignment: 4, startPoints: .marked))
        let reader = stream.makeReader()
        for start in stride(from: 0, to: 1000, by: 40) { stream.append(counting(start, 40)) }
        // Kept: 800..<1000, starting at a sync point.
        #expect(readAll(reader) == counting(800, 200))
        #expect(stream.statistics.skippedBytes == 800)
        #expect(stream.statistics.bytesWritten == 1000)
    }

    @Test func oneAppendLargerThanTheCapacityKeepsItsNewestBytes() {
        let stream = LiveByteStream(configuration: .init(capacity: 100, primeBytes: 100, startPoints: .marked))
        stream.append(counting(0, 50))
        stream.append(counting(50, 250))
        let reader = stream.makeReader()
        // No sync point is kept (the big append's fell out with its first bytes): a new reader
        // waits for the next one rather than start mid-frame.
        #expect(readAll(reader).isEmpty)
        stream.append(counting(300, 10))
        #expect(readAll(reader) == counting(300, 10))
        #expect(stream.statistics.bytesWritten == 310)
    }

    @Test func aResumedReaderIsLedInSoItsFramesStayAligned() {
        let stream = LiveByteStream(configuration: .init(capacity: 400, primeBytes: 0, alignment: 4), header: Array(repeating: 7, count: 44))
        stream.append(counting(0, 40))
        // Asked for byte 46 of the whole stream: two bytes into a frame as the client counts.
        let resumed = stream.makeReader(resumingAt: 46)
        stream.append(counting(40, 8))
        #expect(readAll(resumed) == [0, 0] + counting(40, 8))
        // Asked for byte 10: the header's rest, then the stream.
        let inHeader = stream.makeReader(resumingAt: 10)
        stream.append(counting(48, 4))
        #expect(readAll(inHeader) == Array(repeating: 7, count: 34) + counting(48, 4))
    }

    @Test func aWaitingReaderIsWokenOnceByAnAppendOrTheEnd() async {
        let stream = LiveByteStream(configuration: .init(capacity: 100, primeBytes: 0))
        let reader = stream.makeReader()
        let wakes = Mutex(0)
        reader.whenReadable { wakes.withLock { $0 += 1 } }
        #expect(wakes.withLock { $0 } == 0)
        stream.append([1, 2])
        stream.append([3])
        #expect(wakes.withLock { $0 } == 1)
        _ = readAll(reader)
        reader.whenReadable { wakes.withLock { $0 += 1 } }
        stream.finish()
        #expect(wakes.withLock { $0 } == 2)
        // Ready at once: woken at once.
        reader.whenReadable { wakes.withLock { $0 += 1 } }
        #expect(wakes.withLock { $0 } == 3)
    }

    @Test func closedReadersAreCountedAndTheirWakeUpsDropped() {
        let stream = LiveByteStream(configuration: .init(capacity: 100, primeBytes: 0))
        let woken = Mutex(false)
        do {
            let reader = stream.makeReader()
            #expect(stream.statistics.readersOpen == 1)
            reader.whenReadable { woken.withLock { $0 = true } }
            reader.close()
        }
        stream.append([1])
        #expect(!woken.withLock { $0 })
        #expect(stream.statistics.readersOpen == 0)
        #expect(stream.statistics.readersOpened == 1)
    }

    @Test func sizesAreHeldToWholeFrames() {
        let configuration = LiveByteStream.Configuration(capacity: 1003, primeBytes: 5000, alignment: 4)
        #expect(configuration.capacity == 1000)
        #expect(configuration.primeBytes == 1000)
    }
}
