#if canImport(Glibc)
import Glibc
#endif

/// The audio stream a device has been configured with (a Bluetooth A2DP or
/// LE Audio transport): what to encode, and its volume.
public struct AudioStreamConfiguration: Sendable, Hashable {
    /// The profile the stream belongs to.
    public enum Profile: Sendable, Hashable {
        /// Classic Bluetooth A2DP; volume on a 0–127 scale.
        case a2dp
        /// Bluetooth LE Audio (BAP); volume on a 0–255 scale.
        case leAudio
    }

    public var profile: Profile
    /// The codec's identifier in the profile's numbering (A2DP: 0 is SBC).
    public var codec: UInt8
    /// The codec's configuration as the profile encodes it.
    public var configuration: [UInt8]
    /// The stream's volume, 0.0–1.0, when the device reports one.
    public var volume: Float?
    /// The delay the device reports between receiving audio and playing it (A2DP's Delay
    /// Report), in microseconds; nil when it reports none.
    public var reportedDelayMicroseconds: Int?
    /// Which stream this is (BlueZ: its transport's object path): a speaker that sets its stream
    /// up again with the same codec and configuration makes another stream, and the new one
    /// may be listed before the old one goes.
    public var identity: String

    public init(
        profile: Profile, codec: UInt8, configuration: [UInt8], volume: Float? = nil, reportedDelayMicroseconds: Int? = nil, identity: String = ""
    ) {
        self.identity = identity
        self.reportedDelayMicroseconds = reportedDelayMicroseconds
        self.profile = profile
        self.codec = codec
        self.configuration = configuration
        self.volume = volume
    }
}
