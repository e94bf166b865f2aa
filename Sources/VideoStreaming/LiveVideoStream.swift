public import HTTPServing
public import LiveStreaming
public import MediaDevice
public import RoutingModel
import MediaClock
import Synchronization

/// A route's real-time video as a live HTTP stream: H.264 (``H264Encoder``) in an MPEG
/// transport stream (``MPEGTSMuxer``), kept a few seconds in a ``LiveByteStream`` for the
/// device's fetches.
///
/// Pictures come on the route's video thread (``receive(_:)``) and are encoded there. A device
/// that fetches (or fetches again) starts at an IDR made for it at once: it decodes from its
/// first byte and is shown the picture of now, not the group of pictures before.
///
/// H.264 an app encoded (``VideoFrameFormat/Encoding/h264``) goes into the containers as it
/// comes, without the encoder: an MP4 stream's initialization segment is made from the first
/// IDR's parameter sets, and a device that fetches again starts at the app's next IDR.
///
/// A stream made with an audio format also carries the route's audio (``receiveAudio(_:)``):
/// AAC-LC (FFmpeg's encoder, as the live audio streams), stereo, dated on the same clock as the
/// pictures — in ADTS on a PID of its own in a transport stream, as a second track in an MP4.
public final class LiveVideoStream: RealtimeVideoReceiver {
    /// What the pictures are sent in.
    public enum Container: String, Sendable, Hashable {
        /// MPEG-TS (`video/mpeg`): DLNA renderers and TVs.
        case mpegTS
        /// Fragmented MP4 (`video/mp4`), a fragment per picture: Cast's Default Media Receiver.
        case fragmentedMP4
    }

    public let format: VideoFrameFormat
    public let container: Container
    public let settings: LiveVideoSettings
    /// HTTP headers besides the content type (DLNA's, for a renderer).
    public let extraHeaders: [(String, String)]
    public let bytes: LiveByteStream
    /// The bit rate aimed at; for the app's H.264, what it wrote so far.
    public var bitrate: Int {
        guard format.encoding == .h264 else { return aimedBitrate }
        return pipeline.withLock { pipeline in
            guard let first = pipeline.firstTime, pipeline.lastTime > first else { return 0 }
            return Int(Double(pipeline.unitBytes) * 8 / ((pipeline.lastTime - first + format.frameDuration) / .seconds(1)))
        }
    }
    private let aimedBitrate: Int
    public var codec: String {
        let source = format.encoding == .h264 ? "H.264 (the app's)" : hardwareEncoder.map { "H.264 (\($0))" } ?? "H.264"
        return container == .mpegTS ? "\(source) in MPEG-TS" : "\(source) in fragmented MP4"
    }
    public var mimeType: String { container == .mpegTS ? "video/mpeg" : "video/mp4" }
    /// The libavcodec encoder the pictures go through (``LiveVideoSettings/hardwareEncoders``); nil: OpenH264.
    public let hardwareEncoder: String?
    /// Why each hardware encoder tried was passed over (none on a box without one).
    public let hardwareEncoderRefusals: [String]
    private let pipeline: Mutex<Pipeline>

    private struct Pipeline: ~Copyable {
        /// Nil for the app's H.264, or when a libavcodec (hardware) encoder took the pictures.
        var encoder: H264Encoder?
        var libav: LibavH264Encoder?
        var forceIDR = false
        var transportStream: MPEGTSMuxer
        var mp4: FragmentedMP4Muxer
        var headerMade = false
        var unitBytes = 0
        var firstTime: Duration?
        var lastTime: Duration = .zero
        var audioEncoder: AACLiveEncoder?
        /// Stereo S16LE not yet a whole AAC block.
        var audioPending: [UInt8] = []
        /// When the audio's first frame was due, and AAC frames sent since.
        var audioStart: Duration?
        var audioFramesSent: Int64 = 0
        /// PCM frames taken since `audioStart`.
        var audioFramesTaken: Int64 = 0
    }

    /// The route's audio goes in the stream beside the pictures (a transport stream made with an
    /// audio format whose AAC encoder could be opened).
    public let carriesAudio: Bool
    private let audioRate: Int
    private let audioTrack: FragmentedMP4Muxer.AudioTrack?

    /// Bit rate of `format` at 0.08 bit per pixel per frame (``LiveVideoSettings/bitRate``).
    public static func defaultBitRate(for format: VideoFrameFormat) -> Int {
        max(100_000, Int(Double(format.width * format.height) * format.frameRate * 0.08))
    }

    /// - Throws: unsupported when no H.264 encoder can be opened (the reason says why).
    /// - Parameter audio: the route's audio, to carry beside the pictures (32, 44.1 or 48 kHz;
    ///   without libavcodec's AAC encoder the stream has no audio).
    public init(
        format: VideoFrameFormat, container: Container = .mpegTS, settings: LiveVideoSettings = LiveVideoSettings(), extraHeaders: [(String, String)] = [],
        audio: SampleBuffer.Format? = nil
    ) throws(MediaDeviceError) {
        let bitrate = settings.bitRate ?? Self.defaultBitRate(for: format)
        let intraPeriod = max(1, Int((settings.intraPeriod.seconds * format.frameRate).rounded()))
        var encoder: H264Encoder? = nil
        var libav: LibavH264Encoder? = nil
        var refusals: [String] = []
        if format.encoding.isRaw {
            for name in settings.hardwareEncoders where libav == nil {
                do {
                    libav = try LibavH264Encoder(name: name, format: format, bitRate: bitrate, intraPeriod: intraPeriod)
                } catch {
                    refusals.append(error.description)
                }
            }
        }
        if format.encoding.isRaw, libav == nil {
            do {
                encoder = try H264Encoder(format: format, bitRate: bitrate, intraPeriod: intraPeriod, screenContent: settings.screenContent)
            } catch {
                throw MediaDeviceError(.unsupported, error.description)
            }
        }
        var audioEncoder: AACLiveEncoder? = nil
        if let audio, case .success(let made) = AACLiveEncoder.make(sampleRate: audio.sampleRate, channels: 2) {
            audioEncoder = made
        }
        let audioTrack = audioEncoder == nil ? nil : audio.map { FragmentedMP4Muxer.AudioTrack(sampleRate: $0.sampleRate, channels: 2) }
        // MP4 readers start with the initialization segment, which holds the parameter sets
        // (for the app's H.264: made from its first IDR's, before its bytes).
        var header: [UInt8] = []
        if container == .fragmentedMP4, format.encoding.isRaw, libav == nil {
            guard let sets = try? encoder?.parameterSets(),
                let segment = FragmentedMP4Muxer.initializationSegment(width: format.width, height: format.height, parameterSets: sets, audio: audioTrack)
            else { throw MediaDeviceError(.unsupported, "the H.264 encoder gave no parameter sets for an MP4 stream") }
            header = segment
        }
        self.format = format
        self.container = container
        self.settings = settings
        self.extraHeaders = extraHeaders
        self.aimedBitrate = bitrate
        self.hardwareEncoder = libav?.name
        self.hardwareEncoderRefusals = refusals
        self.audioTrack = audioTrack
        self.carriesAudio = audioEncoder != nil
        self.audioRate = audio?.sampleRate ?? 0
        // Room for `kept` at twice the aimed rate (IDRs and busy scenes overshoot it).
        let capacity = max(1 << 20, Int(settings.kept.seconds * Double(bitrate) / 4))
        self.bytes = LiveByteStream(configuration: LiveByteStream.Configuration(capacity: capacity, primeBytes: 0, startPoints: .marked), header: header)
        self.pipeline = Mutex(
            Pipeline(
                encoder: encoder, libav: libav, transportStream: MPEGTSMuxer(pcrLead: settings.pcrLead, carriesAudio: audioEncoder != nil),
                mp4: FragmentedMP4Muxer(frameDuration: format.frameDuration), audioEncoder: audioEncoder))
    }

    public func receive(_ frame: VideoFrame) -> Bool {
        guard frame.format.width == format.width, frame.format.height == format.height else { return false }
        let container = self.container
        let format = self.format
        let bytes = self.bytes
        let audioTrack = self.audioTrack
        let muxed: (bytes: [UInt8], isIDR: Bool)? = pipeline.withLock { pipeline in
            let unit: H264Encoder.AccessUnit
            if let libav = pipeline.libav {
                defer { pipeline.forceIDR = false }
                guard let encoded = try? libav.encode(frame.data, forceIDR: pipeline.forceIDR) else { return nil }
                unit = encoded
            } else if format.encoding.isRaw {
                guard let encoded = try? pipeline.encoder?.encode(frame.data, encoding: frame.format.encoding, timestamp: frame.presentationTime) else {
                    return nil
                }
                unit = encoded
            } else {
                unit = H264Encoder.AccessUnit(bytes: frame.data, isIDR: H264Encoder.nalUnits(frame.data).contains { $0.first.map { $0 & 0x1F == 5 } ?? false })
                pipeline.unitBytes += frame.data.count
                if pipeline.firstTime == nil { pipeline.firstTime = frame.presentationTime }
                pipeline.lastTime = frame.presentationTime
            }
            // The app's H.264 and a libavcodec encoder's bring their parameter sets with their first
            // IDR: an MP4's initialization segment is made of them, before that IDR's fragment.
            if container == .fragmentedMP4, !pipeline.headerMade, pipeline.libav != nil || !format.encoding.isRaw {
                guard unit.isIDR,
                    let segment = FragmentedMP4Muxer.initializationSegment(width: format.width, height: format.height, parameterSets: unit.bytes, audio: audioTrack)
                else { return nil }
                bytes.provideHeader(segment)
                pipeline.headerMade = true
            }
            switch container {
            case .mpegTS: return (pipeline.transportStream.packets(accessUnit: unit.bytes, isIDR: unit.isIDR, presentationTime: frame.presentationTime), unit.isIDR)
            case .fragmentedMP4: return (pipeline.mp4.fragment(accessUnit: unit.bytes, isIDR: unit.isIDR, presentationTime: frame.presentationTime), unit.isIDR)
            }
        }
        guard let muxed else { return false }
        // Only an IDR's bytes (in a transport stream, PAT and PMT first) are where a reader may start.
        bytes.append(muxed.bytes, syncPoint: muxed.isIDR, presentationTime: frame.presentationTime)
        return true
    }

    /// The route's audio, as its samples come: encoded a 1 024-frame block at a time and muxed
    /// with the time its first frame is due. A buffer more than 200 ms off the count of what came
    /// before (the app paused, or the clock jumped) starts the timestamps again from its own.
    public func receiveAudio(_ buffer: SampleBuffer) {
        guard carriesAudio, buffer.format.sampleRate == audioRate else { return }
        let pcm = buffer.stereoS16LE
        guard !pcm.isEmpty else { return }
        let rate = Int64(audioRate)
        let container = self.container
        let packets: [UInt8] = pipeline.withLock { pipeline in
            guard let encoder = pipeline.audioEncoder else { return [] }
            func time(_ frames: Int64) -> Duration { .nanoseconds(frames * 1_000_000_000 / rate) }
            let expected = pipeline.audioStart.map { $0 + time(pipeline.audioFramesTaken) }
            if expected.map({ abs(($0 - buffer.presentationTime) / .milliseconds(1)) > 200 }) ?? true {
                pipeline.audioStart = buffer.presentationTime
                pipeline.audioFramesTaken = 0
                pipeline.audioFramesSent = 0
                pipeline.audioPending.removeAll(keepingCapacity: true)
            }
            pipeline.audioFramesTaken += Int64(pcm.count / 4)
            pipeline.audioPending += pcm
            let block = AACLiveEncoder.framesPerBlock * 4
            var frames: [[UInt8]] = []
            let firstSent = pipeline.audioFramesSent
            var offset = 0
            while pipeline.audioPending.count - offset >= block {
                let encoded = encoder.encode(pipeline.audioPending[offset..<(offset + block)])
                offset += block
                if !encoded.isEmpty {
                    frames.append(encoded)
                    pipeline.audioFramesSent += 1
                }
            }
            pipeline.audioPending.removeFirst(offset)
            guard let start = pipeline.audioStart, !frames.isEmpty else { return [] }
            let due = start + time(firstSent * Int64(AACLiveEncoder.framesPerBlock))
            switch container {
            case .mpegTS:
                return pipeline.transportStream.audioPackets(adts: frames.flatMap { $0 }, presentationTime: due)
            case .fragmentedMP4:
                // An MP4 waits for its initialization segment (the app's first IDR); its samples have no ADTS header.
                guard pipeline.headerMade || (format.encoding.isRaw && pipeline.libav == nil) else { return [] }
                // Whole seconds and the fraction apart: nanoseconds times the rate would overflow after months of uptime.
                let parts = due.components
                let samples = due <= .zero ? 0 : UInt64(parts.seconds) * UInt64(rate) + UInt64(Double(parts.attoseconds) / 1e18 * Double(rate))
                return pipeline.mp4.audioFragment(frames: frames.map { Array($0.dropFirst(7)) }, decodeTime: samples)
            }
        }
        bytes.append(packets, syncPoint: false)
    }

    public func finish() { bytes.finish() }

    /// The answer to a device's fetch. The first fetch gets the stream from its first picture
    /// (the pictures written while the device was told to play are shown, not lost); a later
    /// one (the device fetches again) from the next picture on, which is made an IDR.
    public func response(to request: HTTPServerRequest) -> HTTPServerResponse {
        let reader: LiveByteStream.Reader
        if bytes.statistics.readersOpened == 0 {
            reader = bytes.makeReader(playingFrom: .zero)
        } else {
            pipeline.withLock { pipeline in
                pipeline.encoder?.forceIntraFrame()
                pipeline.forceIDR = true
            }
            reader = bytes.makeReader(atNextSyncPoint: true)
        }
        let headers: [(String, String)] = [("Content-Type", mimeType), ("Cache-Control", "no-cache")] + extraHeaders
        return HTTPServerResponse(status: 200, headers: headers, body: .live(LiveReaderBody(reader: reader), framing: .closeDelimited))
    }
}
