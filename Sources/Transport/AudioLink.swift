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

    public init(profile: Profile, codec: UInt8, configuration: [UInt8], volume: Float? = nil) {
        self.profile = profile
        self.codec = codec
        self.configuration = configuration
        self.volume = volume
    }
}

/// A connected device's audio stream: its configuration, its volume, and the
/// socket encoded audio goes to.
public protocol AudioLink: Sendable {
    /// The stream's configuration now; nil when the device has no audio stream set up.
    func configuration() async -> AudioStreamConfiguration?

    /// The stream's volume (0.0–1.0) every time the device reports a change.
    func volumeChanges() async -> AsyncStream<Float>

    /// Sets the stream's volume, 0.0–1.0.
    func setVolume(_ fraction: Float) async throws(TransportError)

    /// Takes the stream: the socket to write encoded packets to.
    func acquire() async throws(TransportError) -> PacketSocket

    /// Gives the stream back (the socket obtained from ``acquire()`` is no longer used).
    func release() async
}

/// A socket that takes whole packets of at most ``mtu`` bytes, owned by this object
/// (closed when it goes).
public final class PacketSocket: Sendable {
    /// The largest packet the socket takes.
    public let mtu: Int
    private let descriptor: Int32

    /// Takes ownership of `descriptor`.
    public init(owning descriptor: Int32, mtu: Int) {
        self.descriptor = descriptor
        self.mtu = mtu
    }

    deinit {
        close(descriptor)
    }

    /// Sends one packet without waiting; false when the socket did not take it
    /// (full, or closed by the other end). Real-time audio drops such a packet
    /// rather than falling behind.
    @discardableResult
    public func send(_ packet: [UInt8]) -> Bool {
        packet.withUnsafeBytes { bytes in
            Glibc.send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) == bytes.count
        }
    }
}
