import Synchronization

/// A live stream's bytes as they are produced, kept a few seconds so that a device that
/// connects (or reconnects) is handed a short backlog at once and then the bytes as they come.
///
/// Memory is fixed when the stream is made (``Configuration/capacity``); a reader that falls
/// further behind than that skips to the oldest byte kept (counted in ``Statistics/skippedBytes``),
/// so a device that stops reading costs nothing more. Readers start at a *sync point* — a byte
/// where a decoder may begin (every PCM frame; every FLAC or MP3 frame) — and before the
/// stream's header they get that header, so each connection is a whole stream of its own.
public final class LiveByteStream: Sendable {
    /// Sizes of one stream.
    public struct Configuration: Sendable, Hashable {
        /// Bytes kept (a multiple of `alignment`): how far a reader may fall behind before it skips.
        public var capacity: Int
        /// Bytes of backlog a new reader starts with, so a device that waits for N bytes before it
        /// plays gets them at once ("priming"); the rest comes at the stream's pace.
        public var primeBytes: Int
        /// Every payload byte offset a reader is handed from is a multiple of this (the PCM frame
        /// size; 1 for a framed codec), so a reconnecting device never reads half a frame.
        public var alignment: Int
        /// Where a reader may start.
        public var startPoints: StartPoints

        /// Where a decoder may begin reading.
        public enum StartPoints: Sendable, Hashable {
            /// At any multiple of the alignment (PCM: every frame).
            case anyAlignedByte
            /// Only where an append was marked a sync point (a codec's frame).
            case marked
        }

        /// Payload bytes per second of presentation time, for a reader asked to start at a time
        /// (PCM: the byte rate); nil when the stream's bytes are not paced by time.
        public var bytesPerSecond: Int?

        public init(capacity: Int, primeBytes: Int, alignment: Int = 1, startPoints: StartPoints = .anyAlignedByte, bytesPerSecond: Int? = nil) {
            let alignment = max(1, alignment)
            self.bytesPerSecond = bytesPerSecond.map { max(1, $0) }
            self.alignment = alignment
            self.startPoints = startPoints
            self.capacity = max(alignment, capacity / alignment * alignment)
            self.primeBytes = max(0, min(primeBytes, self.capacity))
        }
    }

    /// What readers took and missed, since the stream was made.
    public struct Statistics: Sendable, Hashable {
        /// Readers made (one per HTTP response served).
        public var readersOpened: Int
        /// Readers open now.
        public var readersOpen: Int
        /// Payload bytes produced.
        public var bytesWritten: UInt64
        /// Payload bytes readers skipped because they fell more than the capacity behind.
        public var skippedBytes: UInt64
    }

    private struct State {
        var ring: [UInt8]
        /// Absolute payload offset of the oldest byte kept, and of the next byte to be written.
        var start: UInt64 = 0
        var end: UInt64 = 0
        /// Absolute offsets where a decoder may start, oldest first (at most ``maximumSyncPoints``).
        var syncPoints: [UInt64] = []
        /// Where appends said their presentation time began, oldest first (as many as sync points).
        var anchors: [(offset: UInt64, time: Duration)] = []
        var header: [UInt8]
        var ended = false
        var waiters: [Int: @Sendable () -> Void] = [:]
        var nextReader = 0
        var statistics = Statistics(readersOpened: 0, readersOpen: 0, bytesWritten: 0, skippedBytes: 0)
        var newestStart: ReaderStart?

        /// When the byte at `offset` is due to play: the newest dated append at or before it and,
        /// at a known byte rate, the bytes between; nil before any dated append.
        func presentationTime(at offset: UInt64, bytesPerSecond: Int?) -> Duration? {
            guard let anchor = anchors.last(where: { $0.offset <= offset }) ?? anchors.first else { return nil }
            guard let rate = bytesPerSecond, rate > 0, offset >= anchor.offset else { return anchor.time }
            return anchor.time + .microseconds(Int64(Double(offset - anchor.offset) * 1e6 / Double(rate)))
        }
    }

    /// Where the newest reader's stream bytes began: what a device that plays from its fetch
    /// counts its position from.
    public struct ReaderStart: Sendable, Hashable {
        /// The reader (one per response, counted from 1).
        public var reader: Int
        /// The presentation time of its first stream byte (after the header); nil when the stream
        /// is undated.
        public var presentationTime: Duration?
    }

    /// Sync points remembered: a stream of small framed buffers keeps the newest this many.
    static let maximumSyncPoints = 4096

    public let configuration: Configuration
    /// Bytes every reader gets before the payload (a WAV header, FLAC's `fLaC` and STREAMINFO).
    public var header: [UInt8] { state.withLock { $0.header } }
    private let state: Mutex<State>

    public init(configuration: Configuration, header: [UInt8] = []) {
        self.configuration = configuration
        self.state = Mutex(State(ring: [UInt8](repeating: 0, count: configuration.capacity), header: header))
    }

    /// Sets the header of a stream that learns it with its first bytes (an app's H.264 in MP4:
    /// the parameter sets come with its first IDR), before appending them. Readers made before
    /// get it first too. Ignored when the stream has a header or bytes already.
    public func provideHeader(_ header: [UInt8]) {
        state.withLock { state in
            guard state.header.isEmpty, state.end == 0 else { return }
            state.header = header
        }
    }

    /// Appends bytes produced; `syncPoint` says a decoder may start at the first of them.
    /// Readers waiting are woken. Ignored once the stream ended.
    /// `presentationTime` (on the caller's clock) says when the first of them is due to play.
    public func append(_ bytes: [UInt8], syncPoint: Bool = true, presentationTime: Duration? = nil) {
        guard !bytes.isEmpty else { return }
        let waiters = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.ended else { return [] }
            let capacity = configuration.capacity
            if let presentationTime {
                if state.anchors.count == Self.maximumSyncPoints { state.anchors.removeFirst(Self.maximumSyncPoints / 4) }
                state.anchors.append((state.end, presentationTime))
            }
            if syncPoint {
                if state.syncPoints.count == Self.maximumSyncPoints { state.syncPoints.removeFirst(Self.maximumSyncPoints / 4) }
                state.syncPoints.append(state.end)
            }
            // Only the newest `capacity` bytes of a large append can be kept.
            let kept = min(bytes.count, capacity)
            state.end &+= UInt64(bytes.count - kept)
            let to = Int(state.end % UInt64(capacity))
            let firstPart = min(kept, capacity - to)
            state.ring.withUnsafeMutableBufferPointer { ring in
                bytes.withUnsafeBufferPointer { source in
                    let from = source.baseAddress! + (bytes.count - kept)
                    (ring.baseAddress! + to).update(from: from, count: firstPart)
                    if firstPart < kept { ring.baseAddress!.update(from: from + firstPart, count: kept - firstPart) }
                }
            }
            state.end &+= UInt64(kept)
            state.statistics.bytesWritten &+= UInt64(bytes.count)
            if state.end - state.start > UInt64(capacity) { state.start = state.end - UInt64(capacity) }
            if let first = state.syncPoints.firstIndex(where: { $0 >= state.start }) {
                state.syncPoints.removeFirst(first)
            } else {
                state.syncPoints.removeAll()
            }
            // The newest anchor at or before the oldest byte kept still dates it.
            if let first = state.anchors.lastIndex(where: { $0.offset <= state.start }), first > 0 { state.anchors.removeFirst(first) }
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for wake in waiters { wake() }
    }

    /// No more bytes: readers get what is kept, then the end.
    public func finish() {
        let waiters = state.withLock { state -> [@Sendable () -> Void] in
            state.ended = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for wake in waiters { wake() }
    }

    /// When the newest byte is due to have played (its append's presentation time and the bytes
    /// after it at ``Configuration/bytesPerSecond``); nil for undated streams.
    public var presentationEnd: Duration? {
        state.withLock { state in
            guard let rate = configuration.bytesPerSecond, let anchor = state.anchors.last else { return nil }
            return anchor.time + .microseconds(Int64(Double(state.end - anchor.offset) * 1e6 / Double(rate)))
        }
    }

    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// Where the newest reader that got stream bytes began; nil before any did.
    public var newestReaderStart: ReaderStart? { state.withLock { $0.newestStart } }

    /// A reader that starts at the newest sync point at least ``Configuration/primeBytes`` before
    /// the live edge (or the oldest one kept), after the header.
    /// - Parameter resumingAt: the byte of the whole stream (header included) the client asked
    ///   for with `Range` after a reconnection: it gets the header's rest if it asked within the
    ///   header, then the stream from the same point as a new reader, led in by zeros so that
    ///   its frames stay aligned where it counts them.
    /// - Parameter time: the presentation time the reader should start at (the stream's
    ///   bytes are dated by their appends); without it, or without dates, the prime decides.
    /// - Parameter atNextSyncPoint: the reader starts at the first sync point appended from now
    ///   on (a video stream asks its encoder for one at once: a reader started at the newest
    ///   one kept would be shown the pictures since, up to a whole group of pictures late).
    public func makeReader(resumingAt requested: UInt64 = 0, playingFrom time: Duration? = nil, atNextSyncPoint: Bool = false) -> Reader {
        let start: (@Sendable () -> Duration)? = time.map { time in { @Sendable in time } }
        return makeReader(resumingAt: requested, playingFrom: start, atNextSyncPoint: atNextSyncPoint, chosenAtFirstRead: false)
    }

    /// A reader like ``makeReader(resumingAt:playingFrom:atNextSyncPoint:)`` whose start is
    /// chosen when its first stream bytes are read, at the presentation time `time()` gives
    /// then — when the stream already holds bytes as it is made (else it starts at the first).
    /// What an HTTP server does between making a response and writing its body (a task to
    /// schedule, the head to write: 10–30 ms in a debug build) then does not make the device
    /// play that much later — a device keeps the offset it starts with.
    public func makeReader(resumingAt requested: UInt64 = 0, playingFrom time: (@Sendable () -> Duration)?, atNextSyncPoint: Bool = false) -> Reader {
        makeReader(resumingAt: requested, playingFrom: time, atNextSyncPoint: atNextSyncPoint, chosenAtFirstRead: true)
    }

    private func makeReader(resumingAt requested: UInt64, playingFrom time: (@Sendable () -> Duration)?, atNextSyncPoint: Bool, chosenAtFirstRead: Bool) -> Reader {
        state.withLock { state in
            state.statistics.readersOpened += 1
            state.statistics.readersOpen += 1
            state.nextReader += 1
            let position = startPosition(in: state, playingFrom: time?())
            var lead: [UInt8] = []
            let header = state.header
            let headerCount = UInt64(header.count)
            if requested < headerCount {
                lead = Array(header[Int(requested)...])
            } else {
                let misalignment = Int((requested - headerCount) % UInt64(configuration.alignment))
                if misalignment != 0 { lead = [UInt8](repeating: 0, count: configuration.alignment - misalignment) }
            }
            let reader = Reader(stream: self, id: state.nextReader, position: atNextSyncPoint ? state.end : position, lead: lead)
            reader.waitsForSyncPoint = atNextSyncPoint
            // Only a reader made while the stream holds bytes: one made before the first (a
            // device that fetched ahead, prepared) starts at the first byte, whenever it comes
            // — chosen again at its read, it started at the sample due then and ran with no
            // margin (gmediarender, alone: 500 ms later in two starts of three).
            if chosenAtFirstRead, !atNextSyncPoint, state.end > 0 { reader.startTime = time }
            // A header still to come (``provideHeader(_:)``) is read before the first bytes.
            reader.awaitsHeader = header.isEmpty && requested == 0 && state.end == 0
            return reader
        }
    }

    /// Where a reader starts: the newest sync point at least the prime before the live edge,
    /// or, at `time`, the byte due then (clamped to what is kept).
    private func startPosition(in state: State, playingFrom time: Duration?) -> UInt64 {
        var wanted = state.end >= UInt64(configuration.primeBytes) ? state.end - UInt64(configuration.primeBytes) : 0
        if let time, let rate = configuration.bytesPerSecond,
            let anchor = state.anchors.last(where: { $0.time <= time }) ?? state.anchors.first
        {
            // Bytes from the anchor to `time` at the stream's rate (negative: before the oldest anchor).
            let seconds = Double((time - anchor.time) / .microseconds(1)) / 1e6
            let offset = Double(anchor.offset) + (seconds * Double(rate)).rounded(.down)
            wanted = UInt64(max(Double(state.start), min(Double(state.end), offset)))
        } else if let time, configuration.bytesPerSecond == nil,
            let anchor = state.anchors.last(where: { $0.time <= time && $0.offset >= state.start }) ?? state.anchors.first(where: { $0.offset >= state.start })
        {
            // Bytes not paced by time (a codec's frames, each dated): the newest dated one due by `time`.
            wanted = anchor.offset
        }
        switch configuration.startPoints {
        case .anyAlignedByte:
            return max(state.start, wanted - wanted % UInt64(configuration.alignment))
        case .marked:
            return state.syncPoints.last(where: { $0 <= wanted }) ?? state.syncPoints.first ?? state.end
        }
    }

    fileprivate func read(_ reader: Reader, maximum: Int) -> Chunk {
        state.withLock { state in
            if reader.awaitsHeader, state.end > 0 || state.ended {
                reader.awaitsHeader = false
                if !state.header.isEmpty {
                    let count = min(maximum, state.header.count)
                    reader.lead = Array(state.header[count...])
                    return .bytes(Array(state.header[..<count]))
                }
            }
            if !reader.gotStreamBytes, let time = reader.startTime, state.end > 0 {
                // The start is chosen now, at the first read that finds stream bytes (before any skip is counted).
                reader.position = startPosition(in: state, playingFrom: time())
                reader.startTime = nil
            }
            if reader.position < state.start {
                let next = configuration.startPoints == .marked ? state.syncPoints.first ?? state.end : state.start
                state.statistics.skippedBytes &+= next - reader.position
                reader.position = next
            }
            if reader.waitsForSyncPoint {
                guard let next = state.syncPoints.first(where: { $0 >= reader.position }) else {
                    reader.position = state.end
                    return state.ended ? .ended : .empty
                }
                reader.position = next
                reader.waitsForSyncPoint = false
            }
            let available = Int(min(state.end - reader.position, UInt64(maximum)))
            guard available > 0 else { return state.ended ? .ended : .empty }
            if !reader.gotStreamBytes {
                reader.gotStreamBytes = true
                if reader.id >= (state.newestStart?.reader ?? 0) {
                    state.newestStart = ReaderStart(
                        reader: reader.id, presentationTime: state.presentationTime(at: reader.position, bytesPerSecond: configuration.bytesPerSecond))
                }
            }
            let capacity = UInt64(configuration.capacity)
            var bytes = [UInt8](repeating: 0, count: available)
            let from = Int(reader.position % capacity)
            let firstPart = min(available, configuration.capacity - from)
            bytes.withUnsafeMutableBufferPointer { out in
                state.ring.withUnsafeBufferPointer { ring in
                    out.baseAddress!.update(from: ring.baseAddress! + from, count: firstPart)
                    if firstPart < available {
                        (out.baseAddress! + firstPart).update(from: ring.baseAddress!, count: available - firstPart)
                    }
                }
            }
            reader.position += UInt64(available)
            return .bytes(bytes)
        }
    }

    fileprivate func whenReadable(_ reader: Reader, _ wake: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.ended || reader.position < state.end { return true }
            state.waiters[reader.id] = wake
            return false
        }
        if now { wake() }
    }

    fileprivate func close(_ reader: Reader) {
        state.withLock { state in
            state.waiters[reader.id] = nil
            state.statistics.readersOpen -= 1
        }
    }

    /// What a read gives.
    public enum Chunk: Sendable, Equatable {
        case bytes([UInt8])
        /// Nothing new yet: wait with ``Reader/whenReadable(_:)``.
        case empty
        /// The stream ended and the reader has everything.
        case ended
    }

    /// One client's place in the stream (one HTTP response). Use from one task at a time.
    public final class Reader: @unchecked Sendable {
        // @unchecked: `position`, `waitsForSyncPoint`, `awaitsHeader`, `gotStreamBytes` and `startTime` are read and written only under the stream's
        // lock (read and whenReadable), and `lead` only by the one task that serves the response (the stream's read
        // sets it for that task's own read call).
        private let stream: LiveByteStream
        fileprivate let id: Int
        fileprivate var position: UInt64
        /// Bytes are skipped until a sync point appended after the reader was made.
        fileprivate var waitsForSyncPoint = false
        /// The stream's header is given before its first bytes (made before it was known).
        fileprivate var awaitsHeader = false
        /// The reader was given stream bytes (its start is noted once).
        fileprivate var gotStreamBytes = false
        /// When set, the start is chosen at the first read that finds stream bytes, at the
        /// presentation time this gives then.
        fileprivate var startTime: (@Sendable () -> Duration)?
        fileprivate var lead: [UInt8]
        private var closed = false

        fileprivate init(stream: LiveByteStream, id: Int, position: UInt64, lead: [UInt8]) {
            self.stream = stream
            self.id = id
            self.position = position
            self.lead = lead
        }

        /// Up to `maximum` bytes: the header (or lead-in) first, then the stream.
        public func read(maximum: Int) -> Chunk {
            guard !closed else { return .ended }
            if !lead.isEmpty {
                let count = min(maximum, lead.count)
                defer { lead.removeFirst(count) }
                return .bytes(Array(lead.prefix(count)))
            }
            return stream.read(self, maximum: maximum)
        }

        /// Calls `wake` once bytes can be read or the stream ended (at once if they can now).
        public func whenReadable(_ wake: @escaping @Sendable () -> Void) {
            guard lead.isEmpty, !closed else { return wake() }
            stream.whenReadable(self, wake)
        }

        /// The client is gone: its wake-up is dropped.
        public func close() {
            guard !closed else { return }
            closed = true
            stream.close(self)
        }

        deinit { close() }
    }
}
