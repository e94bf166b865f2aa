public import HTTPServing
public import RoutingModel
public import MediaClock
import Synchronization

/// One route's real-time audio as an HTTP live stream: sample buffers in (S16LE or F32LE,
/// as delivery hands them), a stream of ``LiveAudioEncoding`` out, answered to each request
/// the device makes (``response(to:)``) from a ``LiveByteStream``.
///
/// The stream starts filling when the first buffer comes, before the device connects. Each
/// fetch starts at the sample whose presentation time is now less ``Configuration/prime``, or
/// less the latest buffer's length if that is longer (so
/// a group member's lead, silence before its first sample, is kept, and a renderer that waits
/// for N bytes can be handed them at once), then follows the stream's pace. A device that
/// reconnects resumes from now, not from the start.
public final class LiveAudioStream: Sendable {
    /// Timings of one stream.
    public struct Configuration: Sendable, Hashable {
        /// Audio a new connection gets at once, from what was produced before it: it starts at
        /// the sample due to play this long ago (a device that waits for N bytes before it plays
        /// starts at once when this is N bytes' worth; its latency is N bytes' worth either way).
        public var prime: Duration
        /// Audio kept for a reader that falls behind (it skips beyond this).
        public var kept: Duration
        /// How the response's length is framed.
        public var framing: HTTPLiveFraming
        /// How the device's clock drift is estimated from its position reports and corrected;
        /// nil: samples always go through unchanged.
        public var drift: PlayoutRateEstimator.Configuration?

        public init(
            prime: Duration = .milliseconds(500), kept: Duration = .seconds(4), framing: HTTPLiveFraming = .closeDelimited,
            drift: PlayoutRateEstimator.Configuration? = PlayoutRateEstimator.Configuration()
        ) {
            self.prime = prime
            self.kept = kept
            self.framing = framing
            self.drift = drift
        }
    }

    public let encoding: LiveAudioEncoding
    public let sampleRate: Int
    public let channels: Int
    public let configuration: Configuration
    /// Headers beside the stream (DLNA's transfer mode and content features, say).
    public let extraHeaders: [(String, String)]
    public let bytes: LiveByteStream
    /// Now, on the clock of the buffers' presentation times.
    private let now: @Sendable () -> Duration
    /// How much audio the latest append carried (µs): delivery's period, what a reader gets at
    /// least at once (see ``response(to:)``).
    private let latestHandOver = Atomic<Int64>(0)
    /// Why a compressed (FLAC, MP3, AAC) stream has no encoder (it then takes no buffers); nil otherwise.
    public let encoderFailure: LiveAudioEncoderError?
    /// The encoder of a compressed stream and the samples waiting for a whole block, with the
    /// first one's time.
    private let frames: Mutex<FrameState?>
    /// The device's clock against the box's and the resampler that follows it.
    private let drift: Mutex<DriftState>

    private struct FrameState {
        let encoder: any LiveFrameEncoder
        var pending: [UInt8] = []
        var pendingStart: Duration = .zero
        var encodedBytes: UInt64 = 0
        var encodedFrames: UInt64 = 0
    }

    /// What the device's position reports say, what has been produced, and the resampler once
    /// the device's rate is known to differ from the box's.
    private struct DriftState {
        var estimator: PlayoutRateEstimator?
        var resampler: DriftResampler?
        var resamplerFailure: LiveAudioEncoderError?
        /// Stream seconds produced (after the resampler), and the presentation time of the newest
        /// append's first output sample with the stream seconds produced before it.
        var produced: Double = 0
        var anchor: (output: Double, time: Double)?
        /// When the first usable estimate came (box seconds), and whether the device was last
        /// reported off its timeline.
        var estimatedSince: Double?
        var offTimeline = false
        var lastReportTime: Double = 0
        /// The reader the device's positions count from, and the stream seconds produced by its
        /// first byte's presentation time.
        var latencyStart: (reader: Int, produced: Double)?
        /// The device's latency by its newest reports (seconds, oldest first).
        var latencySamples: [Double] = []

        /// Stream seconds whose presentation time is `time` or earlier.
        func produced(at time: Double) -> Double {
            guard let anchor else { return 0 }
            return max(0, anchor.output + (time - anchor.time) * (resampler?.ratio ?? 1))
        }
    }

    /// - Parameter now: the clock of the buffers' presentation times (CLOCK_MONOTONIC, as
    ///   delivery stamps them); a reader starts at the sample due now less the prime.
    public init(
        encoding: LiveAudioEncoding, sampleRate: Int, channels: Int, configuration: Configuration = Configuration(),
        extraHeaders: [(String, String)] = [], now: @escaping @Sendable () -> Duration = SampleBuffer.clockNow
    ) {
        self.now = now
        self.encoding = encoding
        self.sampleRate = sampleRate
        self.channels = channels
        self.configuration = configuration
        self.extraHeaders = extraHeaders
        drift = Mutex(DriftState(estimator: configuration.drift.map { PlayoutRateEstimator(configuration: $0) }))
        let bytesPerSecond = sampleRate * encoding.bytesPerFrame(channels: channels)
        func bytes(_ duration: Duration) -> Int {
            Int(Double(bytesPerSecond) * (Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18))
        }
        var header = encoding.header(sampleRate: sampleRate, channels: channels)
        if !encoding.isPCM {
            let made: Result<any LiveFrameEncoder, LiveAudioEncoderError> = switch encoding {
            case .mp3: MP3LiveEncoder.make(sampleRate: sampleRate, channels: channels).map { $0 }
            case .aac: AACLiveEncoder.make(sampleRate: sampleRate, channels: channels).map { $0 }
            case .flac: FLACLiveEncoder.make(sampleRate: sampleRate, channels: channels).map { $0 }
            case .lpcm, .wav: .failure(LiveAudioEncoderError(reason: "\(encoding) needs no encoder"))
            }
            switch made {
            case .success(let encoder):
                header = encoder.header
                frames = Mutex(FrameState(encoder: encoder))
                encoderFailure = nil
            case .failure(let failure):
                frames = Mutex(nil)
                encoderFailure = failure
            }
            // FLAC's, MP3's or AAC's frames: a reader starts at one, found by its date (the bytes are
            // not paced by time); the PCM byte rate bounds what is kept.
            self.bytes = LiveByteStream(
                configuration: LiveByteStream.Configuration(capacity: bytes(configuration.kept), primeBytes: 0, alignment: 1, startPoints: .marked),
                header: header)
        } else {
            frames = Mutex(nil)
            encoderFailure = nil
            self.bytes = LiveByteStream(
                configuration: LiveByteStream.Configuration(
                    capacity: bytes(configuration.kept), primeBytes: bytes(configuration.prime), alignment: encoding.bytesPerFrame(channels: channels),
                    bytesPerSecond: bytesPerSecond),
                header: header)
        }
    }

    public var mimeType: String { encoding.mimeType(sampleRate: sampleRate, channels: channels) }

    /// Bits per second on the wire (FLAC's or MP3's so far; the PCM rate before its first frame).
    public var bitrate: Int {
        let pcm = sampleRate * encoding.bytesPerFrame(channels: channels) * 8
        let (bytes, frames) = self.frames.withLock { ($0?.encodedBytes ?? 0, $0?.encodedFrames ?? 0) }
        guard frames > 0 else { return pcm }
        return Int(min(Double(pcm), Double(bytes) * 8 * Double(sampleRate) / Double(frames)))
    }

    /// Whether `format` is what this stream was made for (another needs a new stream).
    public func takes(_ format: SampleBuffer.Format) -> Bool {
        format.sampleRate == sampleRate && format.channels == channels && format.bytesPerFrame != nil
    }

    /// Encodes one buffer onto the stream; a buffer in another format is dropped (false).
    @discardableResult
    public func append(_ buffer: SampleBuffer) -> Bool {
        guard takes(buffer.format) else { return false }
        guard encoding.isPCM || encoderFailure == nil else { return false }
        guard let (samples, time) = produce(buffer), !samples.isEmpty else { return false }
        if !encoding.isPCM {
            appendFrames(samples, at: time)
        } else {
            bytes.append(samples, presentationTime: time)
        }
        latestHandOver.store(Int64(buffer.frameCount) * 1_000_000 / Int64(max(1, sampleRate)), ordering: .relaxed)
        return true
    }

    /// `buffer`'s samples as 16-bit PCM in the stream's byte order, through the resampler once
    /// drift is corrected, with the presentation time of the first one out (the resampler holds
    /// some back); counted as produced.
    private func produce(_ buffer: SampleBuffer) -> ([UInt8], Duration)? {
        let bigEndian = encoding == .lpcm
        let sampleRate = Double(self.sampleRate), bytesPerFrame = 2 * channels
        let time = Self.seconds(buffer.presentationTime)
        return drift.withLock { state in
            guard let resampler = state.resampler else {
                let samples = Self.pcm16(buffer.data, from: buffer.format.encoding, bigEndian: bigEndian)
                state.anchor = (state.produced, time)
                state.produced += Double(samples.count / bytesPerFrame) / sampleRate
                return (samples, buffer.presentationTime)
            }
            let input = Self.pcm16(buffer.data, from: buffer.format.encoding, bigEndian: false)
            // The first sample out is the one the resampler held back: earlier by what it holds.
            let start = time - resampler.heldFrames / (resampler.ratio * sampleRate)
            let output = resampler.process(input)
            state.anchor = (state.produced, start)
            state.produced += Double(output.count / bytesPerFrame) / sampleRate
            return (bigEndian ? Self.byteSwapped(output) : output, .nanoseconds(Int64((start * 1e9).rounded())))
        }
    }

    // MARK: Drift

    /// The device says it has played `position` seconds of the stream (since it started playing
    /// it) at `time` (now when nil), on the clock of the buffers' presentation times; it read its
    /// position within `roundTrip` before `time` (the question's way there and the answer's
    /// back: whole-second positions are placed no closer than that). Once its
    /// reports say its clock runs at another rate than the box's, the stream's samples go
    /// through a resampler at the device's rate, trimmed to bring back what the drift had
    /// already built up. Returns why a report was not taken.
    ///
    /// A report with a position past zero also measures the device's latency
    /// (``measuredDeviceLatency``): the stream seconds produced by `time` less those the device
    /// played, counted from the first byte of the newest fetch (a device counts its position from
    /// its fetch; one loaded before the first samples waits at zero).
    @discardableResult
    public func devicePlayed(_ position: Double, at time: Duration? = nil, roundTrip: Duration = .zero) -> PlayoutRateEstimator.Rejection? {
        let time = Self.seconds(time ?? now())
        let asked = time - max(0, Self.seconds(roundTrip))
        let channels = self.channels, slew = sampleRate / 2
        let start = bytes.newestReaderStart
        return drift.withLock { state in
            if position > 0, position.isFinite, let start, let begun = start.presentationTime {
                if state.latencyStart?.reader != start.reader {
                    state.latencyStart = (start.reader, state.produced(at: Self.seconds(begun)))
                    state.latencySamples = []
                }
                let sample = state.produced(at: time) - state.latencyStart!.produced - position
                // A receiver's report is not trusted beyond what a device buffers (a Chromecast ~3 s).
                if sample.isFinite, abs(sample) <= Self.plausibleLatency {
                    if state.latencySamples.count == Self.latencySamplesKept { state.latencySamples.removeFirst() }
                    state.latencySamples.append(sample)
                }
            }
            guard state.estimator != nil else { return nil }
            let rejection = state.estimator!.add(position: position, at: time, produced: state.produced(at: time), asked: asked)
            state.lastReportTime = time
            if state.estimator!.estimate == nil {
                state.estimatedSince = nil
            } else if state.estimatedSince == nil {
                state.estimatedSince = time
            }
            let rate = state.estimator!.productionRate
            if state.resampler == nil, state.resamplerFailure == nil, abs(rate - 1) >= 1e-6 {
                switch DriftResampler.make(channels: channels) {
                case .success(let resampler): state.resampler = resampler
                case .failure(let failure): state.resamplerFailure = failure
                }
            }
            state.resampler?.setRatio(rate, slewFrames: slew)
            return rejection
        }
    }

    /// Whether the device just went off its timeline (true) or came back (false); nil when
    /// nothing changed. Off: its offset stays beyond `precision` though the correction has had
    /// twice its correction time since the rate was known (a clock that drifts faster than the
    /// correction's bound, or a device that jumped); back: within half of it.
    public func timelineChange(precision: Duration) -> Bool? {
        let limit = Self.seconds(precision)
        return drift.withLock { state in
            guard let estimator = state.estimator else { return nil }
            guard let estimate = estimator.estimate, let since = state.estimatedSince else {
                return nil
            }
            let settled = state.lastReportTime - since >= 2 * Self.seconds(estimator.configuration.correctionTime)
            if !state.offTimeline, settled, abs(estimate.offset) > limit {
                state.offTimeline = true
                return true
            }
            if state.offTimeline, abs(estimate.offset) < limit / 2 {
                state.offTimeline = false
                return false
            }
            return nil
        }
    }

    /// The device stopped playing (paused, buffering, fetching again): its next reports start a
    /// new estimate and a new latency measure; the rate found so far stays.
    public func deviceStopped() {
        drift.withLock { state in
            state.estimator?.restart()
            state.latencyStart = nil
            state.latencySamples = []
        }
    }

    /// Reports a latency measure rests on: the median of the newest few, so one status that
    /// was slow to come does not move it.
    static let latencySamplesKept = 9

    /// The most latency (seconds) a position report may measure; beyond it the report is no measure.
    static let plausibleLatency = 30.0

    /// How long after its presentation time the device plays a sample, by its position reports
    /// (``devicePlayed(_:at:)``): the median of the newest reports, once there are three; nil
    /// before. As precise as the device's positions and the time their reports take to come:
    /// a Cast receiver's media status carries its media element's time to the millisecond;
    /// whole-second positions (gmediarender) are no measure, and their callers do not ask.
    public var measuredDeviceLatency: Duration? {
        drift.withLock { state in
            guard state.latencySamples.count >= 3 else { return nil }
            let sorted = state.latencySamples.sorted()
            return .nanoseconds(Int64((sorted[sorted.count / 2] * 1e9).rounded()))
        }
    }

    /// What the device's reports say and how the stream follows them.
    public var driftStatus: LiveDriftStatus {
        drift.withLock { state in
            let estimate = state.estimator?.estimate
            return LiveDriftStatus(
                ratePPM: estimate?.ratePPM, uncertaintyPPM: estimate?.uncertaintyPPM,
                offset: estimate.map { .nanoseconds(Int64(($0.offset * 1e9).rounded())) },
                correctionPPM: state.resampler.map { ($0.ratio - 1) * 1e6 }, reports: state.estimator?.count ?? 0,
                resamplerFailure: state.resamplerFailure?.description)
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }

    static func byteSwapped(_ pcm: [UInt8]) -> [UInt8] {
        var out = pcm
        var index = 0
        while index + 1 < out.count {
            out.swapAt(index, index + 1)
            index += 2
        }
        return out
    }

    /// Encodes whole blocks of what waits and `samples` as FLAC or MP3 frames, each a sync point
    /// dated by the first sample of the block that released it (what is left waits for the next
    /// buffer).
    private func appendFrames(_ samples: [UInt8], at time: Duration) {
        let bytesPerFrame = encoding.bytesPerFrame(channels: channels)
        let sampleRate = self.sampleRate
        let frames = self.frames.withLock { current -> [(bytes: [UInt8], time: Duration)] in
            // Taken out and put back: the pending samples are not copied.
            guard var state = current.take() else { return [] }
            defer { current = state }
            let framesPerBlock = state.encoder.framesPerBlock
            let bytesPerBlock = framesPerBlock * bytesPerFrame
            let blockDuration = Duration.microseconds(Int64(framesPerBlock) * 1_000_000 / Int64(max(1, sampleRate)))
            if state.pending.isEmpty { state.pendingStart = time }
            state.pending.append(contentsOf: samples)
            var frames: [(bytes: [UInt8], time: Duration)] = []
            var offset = 0
            while state.pending.count - offset >= bytesPerBlock {
                let frame = state.encoder.encode(state.pending[offset..<offset + bytesPerBlock])
                offset += bytesPerBlock
                if !frame.isEmpty {
                    frames.append((frame, state.pendingStart))
                    state.encodedBytes &+= UInt64(frame.count)
                    state.encodedFrames &+= UInt64(framesPerBlock)
                }
                state.pendingStart += blockDuration
            }
            state.pending.removeFirst(offset)
            return frames
        }
        for frame in frames { bytes.append(frame.bytes, syncPoint: true, presentationTime: frame.time) }
    }

    /// No more audio: connections get what is kept (and what the resampler held), then end.
    public func finish() {
        let rest: ([UInt8], Duration)? = drift.withLock { state in
            guard let resampler = state.resampler, let anchor = state.anchor else { return nil }
            let tail = resampler.drain()
            state.resampler = nil
            guard !tail.isEmpty else { return nil }
            let time = anchor.time + (state.produced - anchor.output) / resampler.ratio
            state.anchor = (state.produced, time)
            state.produced += Double(tail.count / (2 * channels)) / Double(sampleRate)
            return (encoding == .lpcm ? Self.byteSwapped(tail) : tail, .nanoseconds(Int64((time * 1e9).rounded())))
        }
        if let (tail, time) = rest {
            if encoding.isPCM { bytes.append(tail, presentationTime: time) } else { appendFrames(tail, at: time) }
        }
        bytes.finish()
    }

    /// How long until the newest sample is due to play (zero when it is due already): what a
    /// device that has read everything still holds to play, besides its own latency.
    public var remainingPlayOut: Duration {
        guard let end = bytes.presentationEnd else { return .zero }
        return max(.zero, end - now())
    }

    /// Returns once the device has read the ended stream and had time to play it: its readers
    /// are gone (or `limit` passed: a device that stopped reading), then what they were sent
    /// ahead of time and `latency` have played out.
    public func drained(within limit: Duration, latency: Duration, clock: any HostClock) async {
        let deadline = clock.now() + limit
        while bytes.statistics.readersOpen > 0, clock.now() < deadline {
            try? await clock.sleep(for: .milliseconds(50))
        }
        try? await clock.sleep(for: min(remainingPlayOut, limit) + latency)
    }

    /// The answer to a device's request for the stream: from now on (primed), with the
    /// header first; a `Range` from a reconnecting device is answered 206 from the same point.
    public func response(to request: HTTPServerRequest) -> HTTPServerResponse {
        var headers: [(String, String)] = [("Content-Type", mimeType), ("Cache-Control", "no-cache")] + extraHeaders
        let requested = request[header: "range"].flatMap(Self.rangeStart) ?? 0
        let advertised: UInt64? = if case .contentLength(let total) = configuration.framing { total } else { nil }
        var status = 200
        if requested > 0 {
            // Whatever the framing, a resumed fetch is partial content to the client: it counts on from its offset.
            let total = advertised ?? (requested + (1 << 40))
            guard requested < total else {
                return HTTPServerResponse(status: 416, headers: headers + [("Content-Range", "bytes */\(total)")])
            }
            status = 206
            headers.append(("Content-Range", "bytes \(requested)-\(total - 1)/\(total)"))
        }
        // At least the latest hand-over at once: delivery hands audio over a period at a time
        // (100 ms to a lone URL device), and its newest sample is due now at the latest. From the
        // sample due a period ago a device that plays what it fetches as it comes plays a period
        // (and its own delay) after each sample's presentation time, whenever it connects; from
        // the sample due now it would wait for the next hand-over, and on a first fetch skip the
        // stream's first period.
        // Chosen when the body's first bytes are read, not now: what the server does before
        // it writes them would otherwise make the device play that much later for good.
        let reader = bytes.makeReader(resumingAt: requested, playingFrom: { [self] in
            now() - max(configuration.prime, .microseconds(latestHandOver.load(ordering: .relaxed)))
        })
        var framing = configuration.framing
        if case .contentLength(let total) = framing { framing = .contentLength(total - requested) }
        return HTTPServerResponse(status: status, headers: headers, body: .live(LiveReaderBody(reader: reader), framing: framing))
    }

    /// The first byte of `bytes=N-…`; nil for anything else (answered from now).
    static func rangeStart(_ value: String) -> UInt64? {
        let text = value.lowercased().filter { $0 != " " }
        guard text.hasPrefix("bytes="), let dash = text.firstIndex(of: "-") else { return nil }
        let digits = text[text.index(text.startIndex, offsetBy: 6)..<dash]
        guard !digits.isEmpty, digits.count <= 19, digits.allSatisfy(\.isASCII), let start = UInt64(digits) else { return nil }
        return start
    }

    /// 16-bit PCM in the wire's byte order from S16LE or F32LE (clamped); empty for anything else.
    static func pcm16(_ data: [UInt8], from encoding: SampleBuffer.Format.Encoding, bigEndian: Bool) -> [UInt8] {
        switch encoding {
        case .pcmS16LE:
            guard bigEndian else { return Array(data.prefix(data.count & ~1)) }
            var out = [UInt8](repeating: 0, count: data.count & ~1)
            var index = 0
            while index + 1 < data.count {
                out[index] = data[index + 1]
                out[index + 1] = data[index]
                index += 2
            }
            return out
        case .pcmF32LE:
            let count = data.count / 4
            var out = [UInt8](repeating: 0, count: count * 2)
            for sample in 0..<count {
                let bits = UInt32(data[sample * 4]) | UInt32(data[sample * 4 + 1]) << 8 | UInt32(data[sample * 4 + 2]) << 16 | UInt32(data[sample * 4 + 3]) << 24
                let value = Float(bitPattern: bits)
                let scaled = value.isNaN ? 0 : (value * 32767).rounded()
                let clamped = UInt16(bitPattern: Int16(max(-32768, min(32767, scaled))))
                out[sample * 2 + (bigEndian ? 1 : 0)] = UInt8(clamped & 0xFF)
                out[sample * 2 + (bigEndian ? 0 : 1)] = UInt8(clamped >> 8)
            }
            return out
        default:
            return []
        }
    }
}
