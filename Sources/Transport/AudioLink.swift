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

    /// The stream's state every time it changes (changes only: not the state now), ending with ``AudioStreamState/gone``
    /// when the stream itself goes (the profile disconnected, the device or the stack left).
    func states() async -> AsyncStream<AudioStreamState>

    /// Gives the stream back (the socket obtained from ``acquire()`` is no longer used).
    func release() async
}

/// Where a device's audio stream is (BlueZ's `MediaTransport1.State`).
public enum AudioStreamState: Sendable, Hashable {
    /// Configured, not streaming: nobody holds it, or the device suspended it.
    case idle
    /// Being started (acquired, the device not yet streaming).
    case pending
    /// Streaming: packets written to the acquired socket are played.
    case active
    /// The stream no longer exists.
    case gone
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

    /// What became of a packet given to ``send(_:)``.
    public enum SendOutcome: Sendable, Hashable {
        /// The socket took it whole.
        case sent
        /// The socket was full (or took only part): the packet is lost, the stream goes on.
        case dropped
        /// The other end closed the socket (or reset it): no packet will be taken again.
        case closed(errno: Int32)
    }

    /// Sends one packet without waiting. Real-time audio drops a packet the socket
    /// cannot take now rather than falling behind; a closed socket ends the stream.
    @discardableResult
    public func send(_ packet: [UInt8]) -> SendOutcome {
        let sent = packet.withUnsafeBytes { bytes in
            Glibc.send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
        }
        if sent == packet.count { return .sent }
        guard sent < 0 else { return .dropped }
        let code = errno
        switch code {
        case EPIPE, ECONNRESET, ENOTCONN, EBADF, ESHUTDOWN, ECONNREFUSED: return .closed(errno: code)
        default: return .dropped
        }
    }
}
