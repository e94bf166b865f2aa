#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import DBus
public import RoutingModel

/// `org.mediaroute.Session1`, one object per active route: a URL session on it, its
/// playback commands and data channels, and their wire form.
public enum Session1 {
    public static let interface = DaemonNames.session

    /// The PipeWire sink node a route that takes samples gets (`SinkNode`, `SinkFormat`,
    /// `SinkLatency`): who publishes it, the format it asks for and the latency it publishes.
    public struct SinkNode: Sendable, Hashable {
        /// Who publishes the node.
        public enum Publisher: String, Sendable, Hashable {
            /// The daemon, in a system-wide PipeWire (or the one `[audio] pipewire-runtime-dir` names).
            case daemon
            /// `mediarouted pipewire-session` in each user session that runs PipeWire.
            case session
        }
        public var publisher: Publisher
        public var format: SampleBuffer.Format
        public var latencyMicroseconds: UInt64

        public init(publisher: Publisher, format: SampleBuffer.Format, latencyMicroseconds: UInt64) {
            self.publisher = publisher
            self.format = format
            self.latencyMicroseconds = latencyMicroseconds
        }
    }

    /// Every property of the interface, typed.
    public struct Properties: Sendable, Hashable {
        public var id: UUID
        public var deviceID: String
        /// The `Device1` object of the route's device.
        public var device: DBusObjectPath
        public var protocolID: String
        public var playbackState: PlaybackSnapshot.State = .idle
        public var position: Double = 0
        public var rate: Double = 0
        /// 0 when unknown (live, or not started).
        public var duration: Double = 0
        public var title: String?
        /// The URL playing; nil when no URL session runs.
        public var url: String?
        /// The app that started the session in application mode.
        public var application: String?
        /// Why activation chose this protocol.
        public var protocolReason: String?
        /// Real-time audio delivery on the route; nil when none was acquired.
        public var audio: RealtimeAudioStatistics?
        /// Real-time video on the route (`AcquireVideo`); nil when none was acquired.
        public var video: RealtimeVideoStatistics?
        /// What the route's extension says of how it plays (version, timing, codec, bit rate, latency).
        public var details = RouteStatus.Details()
        /// The PipeWire sink node of a route that takes samples; nil when it has none.
        public var sinkNode: SinkNode?
        /// Who publishes the PipeWire video sink node of a route that shows real-time video; nil when it has none.
        public var videoSinkNode: SinkNode.Publisher?

        public init(id: UUID, deviceID: String, device: DBusObjectPath, protocolID: String) {
            self.id = id
            self.deviceID = deviceID
            self.device = device
            self.protocolID = protocolID
        }

        public static let signatures: [(name: String, signature: String)] = [
            ("Id", "s"), ("DeviceId", "s"), ("Device", "o"), ("Protocol", "s"), ("PlaybackState", "s"), ("Position", "d"),
            ("Rate", "d"), ("Duration", "d"), ("Title", "s"), ("Url", "s"), ("Application", "s"), ("ProtocolReason", "s"),
            ("AudioActive", "b"), ("AudioFormat", "s"), ("AudioFramesReceived", "t"), ("AudioFramesDelivered", "t"),
            ("AudioUnderruns", "t"), ("AudioSilenceFrames", "t"), ("AudioFramesDropped", "t"), ("AudioLatency", "t"), ("AudioGroupLead", "t"),
            ("ProtocolVersion", "s"), ("Timing", "s"), ("Codec", "s"), ("Bitrate", "u"), ("LatencyDeclared", "t"),
            ("ClockDrift", "d"), ("TimelineOffset", "x"), ("DriftCorrection", "d"),
            ("SinkNode", "s"), ("SinkFormat", "s"), ("SinkLatency", "t"), ("VideoSinkNode", "s"),
            ("VideoActive", "b"), ("VideoFormat", "s"), ("VideoFramesReceived", "t"), ("VideoFramesSent", "t"), ("VideoFramesDropped", "t"),
            ("VideoFramesRepeated", "t"), ("VideoFramesNotEncoded", "t"), ("VideoCodec", "s"), ("VideoBitrate", "u"),
            ("VideoFailure", "s"),
        ]

        /// Readable only by root, the daemon's user and the `mediaroute` group (what plays, and
        /// where from, can be a private file's path or a URL with a token in it); broadcasts
        /// name them as invalidated without their values.
        public static let privateNames: Set<String> = ["Url"]

        public var values: [String: DBusValue] {
            [
                "Id": .string(id.uuidString),
                "DeviceId": .string(deviceID),
                "Device": .objectPath(device),
                "Protocol": .string(protocolID),
                "PlaybackState": .string(playbackState.rawValue),
                "Position": .double(position),
                "Rate": .double(rate),
                "Duration": .double(duration),
                "Title": .string(title ?? ""),
                "Url": .string(url ?? ""),
                "Application": .string(application ?? ""),
                "ProtocolReason": .string(protocolReason ?? ""),
                "AudioActive": .bool(audio?.active ?? false),
                "AudioFormat": .string(audio.map { $0.format.name } ?? ""),
                "AudioFramesReceived": .uint64(audio?.framesReceived ?? 0),
                "AudioFramesDelivered": .uint64(audio?.framesDelivered ?? 0),
                "AudioUnderruns": .uint64(audio?.underruns ?? 0),
                "AudioSilenceFrames": .uint64(audio?.silenceFrames ?? 0),
                "AudioFramesDropped": .uint64(audio?.framesDropped ?? 0),
                "AudioLatency": .uint64(audio?.latencyMicroseconds ?? 0),
                "AudioGroupLead": .uint64(audio?.groupLeadMicroseconds ?? 0),
                "ProtocolVersion": .string(details.protocolVersion ?? ""),
                "Timing": .string(details.timing?.rawValue ?? ""),
                "Codec": .string(details.codec ?? ""),
                "Bitrate": .uint32(UInt32(clamping: details.bitrate ?? 0)),
                "LatencyDeclared": .uint64(details.declaredLatencyMicroseconds ?? 0),
                "ClockDrift": .double(details.deviceClockPPM ?? 0),
                "TimelineOffset": .int64(details.timelineOffsetMicroseconds ?? 0),
                "DriftCorrection": .double(details.driftCorrectionPPM ?? 0),
                "SinkNode": .string(sinkNode?.publisher.rawValue ?? ""),
                "SinkFormat": .string(sinkNode?.format.name ?? ""),
                "SinkLatency": .uint64(sinkNode?.latencyMicroseconds ?? 0),
                "VideoSinkNode": .string(videoSinkNode?.rawValue ?? ""),
                "VideoActive": .bool(video?.active ?? false),
                "VideoFormat": .string(video.map { Self.videoFormatName($0.format) } ?? ""),
                "VideoFramesReceived": .uint64(video?.framesReceived ?? 0),
                "VideoFramesSent": .uint64(video?.framesSent ?? 0),
                "VideoFramesDropped": .uint64(video?.framesDropped ?? 0),
                "VideoFramesRepeated": .uint64(video?.framesRepeated ?? 0),
                "VideoFramesNotEncoded": .uint64(video?.framesNotEncoded ?? 0),
                "VideoCodec": .string(video?.codec ?? ""),
                "VideoBitrate": .uint32(UInt32(clamping: video?.bitrate ?? 0)),
                "VideoFailure": .string(video?.failure ?? ""),
            ]
        }

        /// A video format as `VideoFormat` says it: `i420/1280x720/30000:1001`.
        public static func videoFormatName(_ format: VideoFrameFormat) -> String {
            "\(format.encoding.rawValue)/\(format.width)x\(format.height)/\(format.frameRateNumerator):\(format.frameRateDenominator)"
        }

        /// The format `videoFormatName` wrote; nil for anything else or a format the video path does not take.
        public static func videoFormat(named name: String) -> VideoFrameFormat? {
            let parts = name.split(separator: "/")
            guard parts.count == 3, let encoding = VideoFrameFormat.Encoding(rawValue: String(parts[0])) else { return nil }
            let size = parts[1].split(separator: "x"), rate = parts[2].split(separator: ":")
            guard size.count == 2, rate.count == 2, let width = Int(size[0]), let height = Int(size[1]), let numerator = Int(rate[0]),
                let denominator = Int(rate[1])
            else { return nil }
            return try? VideoFrameFormat(encoding: encoding, width: width, height: height, frameRateNumerator: numerator, frameRateDenominator: denominator)
        }

        /// The playback properties of `snapshot`, as `PropertiesChanged` carries them.
        public static func playbackValues(of snapshot: PlaybackSnapshot) -> [String: DBusValue] {
            ["PlaybackState": .string(snapshot.state.rawValue), "Position": .double(snapshot.position), "Rate": .double(snapshot.playbackSpeed)]
        }

        /// The `Audio*` properties of `statistics`: what `PropertiesChanged` says once when a
        /// route's real-time audio ended (while it flows they are read on demand only).
        public static func audioValues(of statistics: RealtimeAudioStatistics) -> [String: DBusValue] {
            var properties = Properties(id: UUID(), deviceID: "", device: DaemonNames.root, protocolID: "")
            properties.audio = statistics
            return properties.values.filter { $0.key.hasPrefix("Audio") }
        }

        /// What `PropertiesChanged` says when the URL session ends.
        public static let endedValues: [String: DBusValue] = ["PlaybackState": .string(PlaybackSnapshot.State.idle.rawValue), "Url": .string("")]

        /// The properties in `values`; nil without an id, a device id, a device path and a protocol.
        public init?(values: [String: DBusValue]) {
            guard let text = values["Id"]?.string, let id = UUID(uuidString: text), let deviceID = values["DeviceId"]?.string,
                let device = values["Device"]?.objectPath, let protocolID = values["Protocol"]?.string
            else { return nil }
            self.init(id: id, deviceID: deviceID, device: device, protocolID: protocolID)
            apply(values)
        }

        /// Applies a `PropertiesChanged` payload; the identity of the session never changes.
        public mutating func apply(_ changed: [String: DBusValue]) {
            func text(_ key: String) -> String?? { changed[key]?.string.map { $0.isEmpty ? nil : $0 } }
            if let state = changed["PlaybackState"]?.string.flatMap(PlaybackSnapshot.State.init(rawValue:)) { playbackState = state }
            if let value = changed["Position"]?.double, value.isFinite { position = value }
            if let value = changed["Rate"]?.double, value.isFinite { rate = value }
            if let value = changed["Duration"]?.double, value.isFinite, value >= 0 { duration = value }
            if let value = text("Title") { title = value }
            if let value = text("Url") { url = value }
            if let value = text("Application") { application = value }
            if let value = text("ProtocolReason") { protocolReason = value }
            if let value = text("ProtocolVersion") { details.protocolVersion = value }
            if let value = text("Timing") { details.timing = value.flatMap(RouteStatus.Timing.init(rawValue:)) }
            if let value = text("Codec") { details.codec = value }
            if case .uint32(let value)? = changed["Bitrate"]?.unwrapped { details.bitrate = value == 0 ? nil : Int(value) }
            if case .uint64(let value)? = changed["LatencyDeclared"]?.unwrapped { details.declaredLatencyMicroseconds = value == 0 ? nil : value }
            if let value = changed["ClockDrift"]?.double, value.isFinite { details.deviceClockPPM = value == 0 ? nil : value }
            if case .int64(let value)? = changed["TimelineOffset"]?.unwrapped { details.timelineOffsetMicroseconds = value == 0 ? nil : value }
            if let value = changed["DriftCorrection"]?.double, value.isFinite { details.driftCorrectionPPM = value == 0 ? nil : value }
            if let publisher = changed["SinkNode"]?.string {
                let format = changed["SinkFormat"]?.string.flatMap(SampleBuffer.Format.init(name:))
                var latency: UInt64 = 0
                if case .uint64(let value)? = changed["SinkLatency"]?.unwrapped { latency = value }
                sinkNode = SinkNode.Publisher(rawValue: publisher).flatMap { publisher in
                    format.map { SinkNode(publisher: publisher, format: $0, latencyMicroseconds: latency) }
                }
            }
            if let publisher = changed["VideoSinkNode"]?.string { videoSinkNode = SinkNode.Publisher(rawValue: publisher) }
            if let text = changed["VideoFormat"]?.string {
                video = Self.videoFormat(named: text).map { RealtimeVideoStatistics(format: $0, active: false) }
            }
            if video != nil {
                func count(_ key: String) -> UInt64? {
                    if case .uint64(let value)? = changed[key]?.unwrapped { return value }
                    return nil
                }
                if let value = changed["VideoActive"]?.bool { video?.active = value }
                if let value = count("VideoFramesReceived") { video?.framesReceived = value }
                if let value = count("VideoFramesSent") { video?.framesSent = value }
                if let value = count("VideoFramesDropped") { video?.framesDropped = value }
                if let value = count("VideoFramesRepeated") { video?.framesRepeated = value }
                if let value = count("VideoFramesNotEncoded") { video?.framesNotEncoded = value }
                if let value = text("VideoCodec") { video?.codec = value }
                if case .uint32(let value)? = changed["VideoBitrate"]?.unwrapped { video?.bitrate = value == 0 ? nil : Int(value) }
                if let value = text("VideoFailure") { video?.failure = value }
            }
            if let text = changed["AudioFormat"]?.string {
                audio = SampleBuffer.Format(name: text).map { RealtimeAudioStatistics(format: $0, active: false) }
            }
            if audio != nil {
                func count(_ key: String) -> UInt64? {
                    if case .uint64(let value)? = changed[key]?.unwrapped { return value }
                    return nil
                }
                if let value = changed["AudioActive"]?.bool { audio?.active = value }
                if let value = count("AudioFramesReceived") { audio?.framesReceived = value }
                if let value = count("AudioFramesDelivered") { audio?.framesDelivered = value }
                if let value = count("AudioUnderruns") { audio?.underruns = value }
                if let value = count("AudioSilenceFrames") { audio?.silenceFrames = value }
                if let value = count("AudioFramesDropped") { audio?.framesDropped = value }
                if let value = count("AudioLatency") { audio?.latencyMicroseconds = value }
                if let value = count("AudioGroupLead") { audio?.groupLeadMicroseconds = value }
            }
        }

        /// The route's status as the properties say it, for a device and protocol of these names.
        public func routeStatus(device: String, protocolName: String) -> RouteStatus {
            RouteStatus(
                device: device, protocolID: protocolID, protocolName: protocolName, protocolReason: protocolReason, details: details,
                audio: audio, video: video)
        }

        /// Brings `snapshot` to what the properties say of playback.
        public func apply(to snapshot: inout PlaybackSnapshot) {
            snapshot.state = playbackState
            snapshot.position = position
            snapshot.playbackSpeed = rate
            if duration > 0 { snapshot.timeRange = 0...duration }
        }
    }

    /// Who a URL session is for: the device's player, or an app of the device launched for the caller.
    public enum Mode: String, Sendable, Hashable {
        case player
        case application
    }

    /// Which data channel a `Received` signal carries.
    public enum Channel: String, Sendable, Hashable {
        /// From the extension to the app.
        case route
        /// From the device's application to the app.
        case session
    }

    /// A call of one of the interface's methods.
    public enum Call: BusCall, Equatable {
        /// `Start` without metadata, `StartWithMetadata` with it.
        case start(url: URL, mode: Mode, metadata: PlaybackMetadata?)
        /// A local file the caller opened, handed over as a descriptor (the daemon never opens
        /// the caller's paths); `name` is what the device is told (its extension gives the type).
        case startFile(descriptor: DBusFileDescriptor, name: String, mode: Mode, metadata: PlaybackMetadata)
        case selectAudible(optionID: String)
        case selectLegible(optionID: String)
        case stop
        case play
        case pause
        case seek(position: Double)
        case setRate(Double)
        /// To the device's application (session data channel).
        case send([UInt8])
        /// To the extension (route data channel).
        case sendToExtension([UInt8])
        /// Opens paced real-time audio of a format; the reply carries the descriptor to write into.
        case acquireAudio(SampleBuffer.Format)
        /// Ends real-time audio now (what is queued is dropped).
        case releaseAudio
        /// Real-time video of this format: the reply is (h fd, t latency in µs).
        case acquireVideo(VideoFrameFormat)
        /// Ends the real-time video now.
        case releaseVideo
        /// Says what the route's real-time audio is (title, artist, album, duration, position, artwork).
        case setNowPlaying(RealtimeNowPlaying)

        public static let methods: [BusMethodDescription] = [
            BusMethodDescription("Start", inputs: [DBusArgument("url", "s"), DBusArgument("mode", "s")]),
            BusMethodDescription("StartWithMetadata", inputs: [DBusArgument("url", "s"), DBusArgument("mode", "s"), DBusArgument("metadata", "a{sv}")]),
            BusMethodDescription(
                "StartFile",
                inputs: [DBusArgument("fd", "h"), DBusArgument("name", "s"), DBusArgument("mode", "s"), DBusArgument("metadata", "a{sv}")]),
            BusMethodDescription("SelectAudible", inputs: [DBusArgument("option", "s")]),
            BusMethodDescription("SelectLegible", inputs: [DBusArgument("option", "s")]),
            BusMethodDescription("Stop"),
            BusMethodDescription("Play"),
            BusMethodDescription("Pause"),
            BusMethodDescription("Seek", inputs: [DBusArgument("position", "d")]),
            BusMethodDescription("SetRate", inputs: [DBusArgument("rate", "d")]),
            BusMethodDescription("Send", inputs: [DBusArgument("data", "ay")]),
            BusMethodDescription("SendToExtension", inputs: [DBusArgument("data", "ay")]),
            BusMethodDescription(
                "AcquireAudio", inputs: [DBusArgument("encoding", "s"), DBusArgument("rate", "u"), DBusArgument("channels", "u")],
                outputs: [
                    DBusArgument("fd", "h"), DBusArgument("encoding", "s"), DBusArgument("rate", "u"), DBusArgument("channels", "u"),
                    DBusArgument("latency_us", "t"),
                ]),
            BusMethodDescription("ReleaseAudio"),
            BusMethodDescription(
                "AcquireVideo",
                inputs: [
                    DBusArgument("encoding", "s"), DBusArgument("width", "u"), DBusArgument("height", "u"), DBusArgument("rate_numerator", "u"),
                    DBusArgument("rate_denominator", "u"),
                ],
                outputs: [DBusArgument("fd", "h"), DBusArgument("latency_us", "t")]),
            BusMethodDescription("ReleaseVideo"),
            BusMethodDescription("SetNowPlaying", inputs: [DBusArgument("now_playing", "a{sv}")]),
        ]

        public init(member: String, arguments: [DBusValue]) throws(DBusError) {
            func start(_ count: Int) throws(DBusError) -> (URL, Mode) {
                let reader = try BusArguments(member, arguments, count: count)
                guard let url = URL(string: try reader.string(0)), url.scheme != nil else {
                    throw MediaDeviceError(.invalidArgument, "not a URL").dbusError
                }
                guard let mode = Mode(rawValue: try reader.string(1)) else {
                    throw MediaDeviceError(.invalidArgument, "mode must be player or application").dbusError
                }
                return (url, mode)
            }
            func number(_ name: String) throws(DBusError) -> Double {
                let value = try BusArguments(member, arguments, count: 1).double(0)
                guard value.isFinite else { throw MediaDeviceError(.invalidArgument, "\(name) must be a number").dbusError }
                return value
            }
            switch member {
            case "Start":
                let (url, mode) = try start(2)
                self = .start(url: url, mode: mode, metadata: nil)
            case "StartWithMetadata":
                let (url, mode) = try start(3)
                do {
                    self = .start(url: url, mode: mode, metadata: try SessionMetadataCodec.decode(arguments[2]))
                } catch let error as MediaDeviceError {
                    throw error.dbusError
                } catch {
                    throw DBusError.invalidArgs("StartWithMetadata: \(error)")
                }
            case "StartFile":
                let reader = try BusArguments(member, arguments, count: 4)
                let descriptor = try reader.fileDescriptor(0)
                let name = try reader.string(1)
                guard let mode = Mode(rawValue: try reader.string(2)) else {
                    throw MediaDeviceError(.invalidArgument, "mode must be player or application").dbusError
                }
                do {
                    self = .startFile(descriptor: descriptor, name: name, mode: mode, metadata: try SessionMetadataCodec.decode(arguments[3]))
                } catch let error as MediaDeviceError {
                    throw error.dbusError
                } catch {
                    throw DBusError.invalidArgs("StartFile: \(error)")
                }
            case "SelectAudible": self = .selectAudible(optionID: try BusArguments(member, arguments, count: 1).string(0))
            case "SelectLegible": self = .selectLegible(optionID: try BusArguments(member, arguments, count: 1).string(0))
            case "Stop": _ = try BusArguments(member, arguments, count: 0); self = .stop
            case "Play": _ = try BusArguments(member, arguments, count: 0); self = .play
            case "Pause": _ = try BusArguments(member, arguments, count: 0); self = .pause
            case "Seek": self = .seek(position: try number("position"))
            case "SetRate": self = .setRate(try number("rate"))
            case "Send": self = .send(try BusArguments(member, arguments, count: 1).bytes(0))
            case "SendToExtension": self = .sendToExtension(try BusArguments(member, arguments, count: 1).bytes(0))
            case "AcquireAudio":
                self = .acquireAudio(try BusArguments(member, arguments, count: 3).pcmFormat(at: 0))
            case "ReleaseAudio": _ = try BusArguments(member, arguments, count: 0); self = .releaseAudio
            case "AcquireVideo": self = .acquireVideo(try BusArguments(member, arguments, count: 5).videoFormat(at: 0))
            case "ReleaseVideo": _ = try BusArguments(member, arguments, count: 0); self = .releaseVideo
            case "SetNowPlaying":
                _ = try BusArguments(member, arguments, count: 1)
                do {
                    self = .setNowPlaying(try SessionMetadataCodec.decodeNowPlaying(arguments[0]))
                } catch let error as MediaDeviceError {
                    throw error.dbusError
                } catch {
                    throw DBusError.invalidArgs("SetNowPlaying: \(error)")
                }
            default: throw DBusError.unknownMember(member, of: Session1.interface)
            }
        }

        public var member: String {
            switch self {
            case .start(_, _, let metadata): metadata == nil ? "Start" : "StartWithMetadata"
            case .startFile: "StartFile"
            case .selectAudible: "SelectAudible"
            case .selectLegible: "SelectLegible"
            case .stop: "Stop"
            case .play: "Play"
            case .pause: "Pause"
            case .seek: "Seek"
            case .setRate: "SetRate"
            case .send: "Send"
            case .sendToExtension: "SendToExtension"
            case .acquireAudio: "AcquireAudio"
            case .releaseAudio: "ReleaseAudio"
            case .acquireVideo: "AcquireVideo"
            case .releaseVideo: "ReleaseVideo"
            case .setNowPlaying: "SetNowPlaying"
            }
        }

        public var arguments: [DBusValue] {
            switch self {
            case .start(let url, let mode, let metadata):
                [.string(url.absoluteString), .string(mode.rawValue)] + (metadata.map { [SessionMetadataCodec.encode($0)] } ?? [])
            case .startFile(let descriptor, let name, let mode, let metadata):
                [.unixFD(descriptor), .string(name), .string(mode.rawValue), SessionMetadataCodec.encode(metadata)]
            case .selectAudible(let id), .selectLegible(let id): [.string(id)]
            case .stop, .play, .pause: []
            case .seek(let position): [.double(position)]
            case .setRate(let rate): [.double(rate)]
            case .send(let bytes), .sendToExtension(let bytes): [.bytes(bytes)]
            case .acquireAudio(let format):
                [.string(format.encoding.pcmName ?? ""), .uint32(UInt32(clamping: format.sampleRate)), .uint32(UInt32(clamping: format.channels))]
            case .releaseAudio, .releaseVideo: []
            case .acquireVideo(let format):
                [
                    .string(format.encoding.rawValue), .uint32(UInt32(format.width)), .uint32(UInt32(format.height)),
                    .uint32(UInt32(format.frameRateNumerator)), .uint32(UInt32(format.frameRateDenominator)),
                ]
            case .setNowPlaying(let nowPlaying): [SessionMetadataCodec.encode(nowPlaying)]
            }
        }

        /// The call carrying an app's playback command, when the command is one of this interface's.
        public init?(_ command: PlaybackCommand) {
            switch command {
            case .play: self = .play
            case .pause: self = .pause
            case .seek(let position): self = .seek(position: position)
            case .setSpeed(let rate): self = .setRate(rate)
            case .stop: self = .stop
            case .selectAudible(let option): self = .selectAudible(optionID: option?.id ?? "")
            case .selectLegible(let option): self = .selectLegible(optionID: option?.id ?? "")
            case .setVolume, .setMuted: return nil
            }
        }
    }

    /// The reply of `AcquireVideo`: (h fd, t latency in µs).
    public enum VideoReply {
        public static func values(descriptor: DBusFileDescriptor, latency: Duration) -> [DBusValue] {
            [.unixFD(descriptor), .uint64(AudioReply.microseconds(latency))]
        }

        /// The acquisition a reply describes; the descriptor is duplicated for the caller, who owns it.
        public static func acquisition(from reply: [DBusValue], format: VideoFrameFormat) throws(DBusError) -> VideoAcquisition {
            guard reply.count == 2, case .unixFD(let fd) = reply[0].unwrapped, case .uint64(let microseconds) = reply[1].unwrapped else {
                throw DBusError.invalidArgs("AcquireVideo: the reply is not (h, t)")
            }
            let descriptor = fd.duplicate()
            guard descriptor >= 0 else { throw DBusError(name: "org.freedesktop.DBus.Error.Failed", message: "AcquireVideo: no descriptor") }
            return VideoAcquisition(descriptor: descriptor, format: format, latency: .microseconds(Int64(clamping: microseconds)))
        }
    }

    /// The reply of `AcquireAudio`: (h fd, s encoding, u rate, u channels, t latency in µs).
    public enum AudioReply {
        public static func values(descriptor: DBusFileDescriptor, format: SampleBuffer.Format, latency: Duration) -> [DBusValue] {
            [
                .unixFD(descriptor), .string(format.encoding.pcmName ?? ""), .uint32(UInt32(clamping: format.sampleRate)),
                .uint32(UInt32(clamping: format.channels)), .uint64(microseconds(latency)),
            ]
        }

        /// A duration in whole microseconds (0 for a negative one).
        public static func microseconds(_ duration: Duration) -> UInt64 {
            let (seconds, attoseconds) = duration.components
            return UInt64(clamping: seconds.multipliedReportingOverflow(by: 1_000_000).partialValue + attoseconds / 1_000_000_000_000)
        }

        /// The acquisition a reply describes; the descriptor is duplicated for the caller, who owns it.
        public static func acquisition(from reply: [DBusValue]) throws(DBusError) -> AudioAcquisition {
            guard reply.count == 5, case .unixFD(let fd) = reply[0].unwrapped, let name = reply[1].string,
                let encoding = SampleBuffer.Format.Encoding(pcmName: name),
                case .uint32(let rate) = reply[2].unwrapped, case .uint32(let channels) = reply[3].unwrapped,
                case .uint64(let microseconds) = reply[4].unwrapped
            else { throw DBusError.invalidArgs("AcquireAudio: the reply is not (h, s, u, u, t)") }
            let descriptor = fd.duplicate()
            guard descriptor >= 0 else { throw DBusError(name: "org.freedesktop.DBus.Error.Failed", message: "AcquireAudio: no descriptor") }
            return AudioAcquisition(
                descriptor: descriptor, format: SampleBuffer.Format(encoding: encoding, sampleRate: Int(rate), channels: Int(channels)),
                latency: .microseconds(Int64(clamping: microseconds)))
        }
    }

    /// A signal the interface emits.
    public enum Signal: Sendable, Hashable {
        case received(Channel, data: [UInt8])
        /// The route ended; nil when it was asked to.
        case ended(MediaDeviceError?)

        public static let descriptions: [DBusSignalDescription] = [
            DBusSignalDescription("Received", arguments: [DBusArgument("channel", "s"), DBusArgument("data", "ay")]),
            DBusSignalDescription("Ended", arguments: [DBusArgument("error", "s"), DBusArgument("message", "s")]),
        ]

        public var member: String {
            switch self {
            case .received: "Received"
            case .ended: "Ended"
            }
        }

        public var arguments: [DBusValue] {
            switch self {
            case .received(let channel, let data): [.string(channel.rawValue), .bytes(data)]
            case .ended(let reason): [.string(reason?.dbusError.name ?? ""), .string(reason?.message ?? "")]
            }
        }

        /// The signal in `member` and `body`; nil for another signal or a malformed body.
        public init?(member: String, body: [DBusValue]) {
            switch member {
            case "Received":
                guard body.count == 2, let channel = body[0].string.flatMap(Channel.init(rawValue:)), let data = body[1].bytes else { return nil }
                self = .received(channel, data: data)
            case "Ended":
                guard body.count == 2, let name = body[0].string, let message = body[1].string else { return nil }
                self = .ended(name.isEmpty ? nil : MediaDeviceError(dbusError: DBusError(name: name, message: message)))
            default:
                return nil
            }
        }
    }
}

