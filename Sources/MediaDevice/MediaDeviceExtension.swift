#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A sharing protocol's implementation: discovery, activation and playback for its devices.
///
/// The system calls an extension and the call returns quickly; the outcome
/// arrives later through the extension's ``MediaDeviceRoutingManager``
/// (`activatedDevice`, `failedToActivateDevice`, `requestPairingCode`,
/// `started`, …). That lets one activation span a pairing prompt and keeps a
/// slow device from blocking the system. Extensions are actors: each owns its
/// protocol clients and is reached only through these calls.
///
/// The system gives an extension its routing manager when it loads it (see
/// `RouteSystem.load(_:)`); keep it in a stored property.
public protocol MediaDeviceExtension: Actor {
    /// The protocol this extension speaks. Validated when the extension is
    /// loaded: non-empty, reverse-DNS, unique among loaded extensions.
    nonisolated var protocolType: MediaSharingProtocol { get }

    /// Whether the extension can run more than one ``MediaOutputSession`` at once.
    nonisolated var supportsSimultaneousSessions: Bool { get }

    /// Starts protocol discovery; report devices with `foundDevice`.
    func startDeviceDiscovery()
    /// Stops discovery and releases its resources.
    func stopDeviceDiscovery()

    /// Connects to the device; report `activatedDevice`, `failedToActivateDevice`
    /// or `requestPairingCode`.
    func activateDevice(
        _ device: MediaOutputDevice, session: MediaOutputSession, for deviceFeatures: MediaOutputDevice.Capabilities)
    /// Authenticates with the person's input; nil means the person cancelled.
    func connectUsingPairingCode(_ pairingCode: String?, to device: MediaOutputDevice, session: MediaOutputSession)
    /// Disconnects and releases everything tied to the session.
    func deactivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession)

    /// Sets an absolute volume, 0.0–1.0 (devices with absolute volume control).
    func setVolume(_ volume: Float, for device: MediaOutputDevice)
    /// The device's current volume, 0.0–1.0.
    func volume(for device: MediaOutputDevice) -> Float
    /// Raises or lowers the volume by steps (devices with relative volume control).
    func changeVolume(by increments: Int, for device: MediaOutputDevice)
    /// Mutes the device.
    func muteDevice(_ device: MediaOutputDevice)
    /// Unmutes the device.
    func unmuteDevice(_ device: MediaOutputDevice)
    /// Whether the device is muted.
    func isDeviceMuted(_ device: MediaOutputDevice) -> Bool

    /// Begins playback of `url` on the device; report `started` or `sessionFailed`.
    func startSession(_ session: MediaOutputSession, identifier: String?, url: URL)
    /// Starts playback with what the app says it plays (title, artist, album, artwork,
    /// duration, live): an extension whose protocol carries it (DIDL-Lite for UPnP)
    /// implements this one; the default ignores the metadata.
    func startSession(_ session: MediaOutputSession, identifier: String?, url: URL, metadata: PlaybackMetadata)
    /// Stops playback for the session.
    func stopSession(_ session: MediaOutputSession)

    /// Forwards data from the app to the named application on the device.
    func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession)
    /// Data from the app addressed to the extension itself (the route data channel).
    func receiveData(_ data: Data, fromApplication applicationIdentifier: String, session: MediaOutputSession)

    /// Whether ``receiveData(_:fromApplication:session:)`` does something: when false (the
    /// default) the system refuses route-channel sends with a typed error instead of dropping them.
    nonisolated var receivesRouteData: Bool { get }
}

extension MediaDeviceExtension {
    public nonisolated var supportsSimultaneousSessions: Bool { false }

    public nonisolated var receivesRouteData: Bool { false }

    public func startSession(_ session: MediaOutputSession, identifier: String?, url: URL, metadata: PlaybackMetadata) {
        startSession(session, identifier: identifier, url: url)
    }

    public func unmuteDevice(_ device: MediaOutputDevice) {}

    public func receiveData(_ data: Data, fromApplication applicationIdentifier: String, session: MediaOutputSession) {}
}

/// An extension that takes real-time samples instead of (or as well as) URLs.
public protocol RealtimeSampleHandling: MediaDeviceExtension {
    /// Samples start flowing for the session: set up encoders and the stream to the device.
    func startRealtimeSampleDelivery(session: MediaOutputSession)
    /// Samples stop: tear down encoders and stop sending.
    func stopRealtimeSampleDelivery(session: MediaOutputSession)
    /// One buffer of samples for the session, in presentation order.
    func receiveSamples(_ buffer: SampleBuffer, session: MediaOutputSession)
    /// The PCM the session's device takes and the latency it adds (default: ``RealtimeAudioSupport/standard``).
    func realtimeAudioSupport(session: MediaOutputSession) -> RealtimeAudioSupport
    /// The samples already handed over are not to be played: the app paused or jumped in its
    /// source. A device that buffers (AirPlay's two seconds) drops what it holds, so the pause
    /// is heard now; samples that come after play as soon as they can. Default: nothing (a
    /// device that plays what it gets at once has nothing to drop).
    func flushRealtimeSamples(session: MediaOutputSession)
    /// What the samples are, for a device that shows it (AirPlay's title, artwork and progress).
    /// Called when the app sets it and again for each new stream on the route. Default: ignored.
    func updateRealtimeNowPlaying(_ nowPlaying: RealtimeNowPlaying, session: MediaOutputSession)
}

extension RealtimeSampleHandling {
    public func realtimeAudioSupport(session: MediaOutputSession) -> RealtimeAudioSupport { .standard }
    public func flushRealtimeSamples(session: MediaOutputSession) {}
    public func updateRealtimeNowPlaying(_ nowPlaying: RealtimeNowPlaying, session: MediaOutputSession) {}
}

/// What an app's real-time audio is: its metadata, cover art and where in it the app is.
public struct RealtimeNowPlaying: Sendable, Equatable {
    /// Cover art as image bytes.
    public struct Artwork: Sendable, Equatable {
        /// The most artwork a route carries: a receiver's screen needs no more.
        public static let maximumBytes = 1 << 20

        /// `image/jpeg` or `image/png`.
        public var mimeType: String
        public var bytes: [UInt8]

        /// Artwork whose bytes are JPEG or PNG (told by their signature, whatever the name says);
        /// nil for anything else or past ``maximumBytes``.
        public init?(bytes: [UInt8]) {
            guard bytes.count <= Self.maximumBytes else { return nil }
            if bytes.starts(with: [0xFF, 0xD8, 0xFF]) {
                mimeType = "image/jpeg"
            } else if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
                mimeType = "image/png"
            } else {
                return nil
            }
            self.bytes = bytes
        }
    }

    /// Title, artist, album and duration (seconds).
    public var metadata: PlaybackMetadata
    public var artwork: Artwork?
    /// Seconds into the track of the samples the app writes now; nil when unknown.
    public var position: Double?

    public init(metadata: PlaybackMetadata = PlaybackMetadata(), artwork: Artwork? = nil, position: Double? = nil) {
        self.metadata = metadata
        self.artwork = artwork
        self.position = position
    }
}

/// A buffer of media samples on its way to a device.
public struct SampleBuffer: Sendable, Hashable {
    /// How the samples are encoded.
    public struct Format: Sendable, Hashable, Codable {
        public enum Encoding: String, Sendable, Hashable, Codable {
            /// Interleaved signed 16-bit little-endian PCM.
            case pcmS16LE
            /// Interleaved 32-bit float PCM.
            case pcmF32LE
            /// Already-encoded frames (e.g. ALAC, H.264), opaque to the system.
            case encoded
        }

        public var encoding: Encoding
        public var sampleRate: Int
        public var channels: Int

        public init(encoding: Encoding, sampleRate: Int, channels: Int) {
            self.encoding = encoding
            self.sampleRate = sampleRate
            self.channels = channels
        }

        /// CD-quality stereo PCM.
        public static let cdAudio = Format(encoding: .pcmS16LE, sampleRate: 44_100, channels: 2)
    }

    public var format: Format
    /// When the delivery's clock reached the first frame, on CLOCK_MONOTONIC (as a duration since
    /// boot); the device adds its own latency. Buffers of one stream advance by their length;
    /// buffers handed to several devices by one delivery (a group) carry the same time, so
    /// devices that schedule playback themselves (AirPlay) play them at the same instant.
    public var presentationTime: Duration
    /// Number of frames (one sample per channel) in ``data``.
    public var frameCount: Int
    public var data: [UInt8]

    /// Now on the clock of ``presentationTime`` (CLOCK_MONOTONIC, as a duration since boot).
    public static func clockNow() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }

    public init(format: Format, presentationTime: Duration, frameCount: Int, data: [UInt8]) {
        self.format = format
        self.presentationTime = presentationTime
        self.frameCount = frameCount
        self.data = data
    }
}
