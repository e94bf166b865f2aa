#if canImport(Glibc)
import Glibc
#endif

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

    /// The stream's configuration now, then again each time the stream appears, goes (nil) or
    /// changes what the speaker reports of it (its delay): a speaker may set its stream up after
    /// the link is (or on its own), and set it up again with another codec.
    func configurations() async -> AsyncStream<AudioStreamConfiguration?>

    /// The device's own stream endpoints (what it can take), when the stack lists them.
    func remoteEndpoints() async -> [RemoteAudioEndpoint]

    /// Sets the stream up again with one of the device's endpoints, the local codec named
    /// `localCodec` and `configuration` (a codec switch): the current stream goes and a new one
    /// comes, seen through ``configurations()``.
    func configure(_ endpoint: RemoteAudioEndpoint, localCodec: String, configuration: [UInt8]) async throws(TransportError)
}

extension AudioLink {
    public func remoteEndpoints() async -> [RemoteAudioEndpoint] { [] }

    public func configure(_ endpoint: RemoteAudioEndpoint, localCodec: String, configuration: [UInt8]) async throws(TransportError) {
        throw TransportError(.unsupported, "this link cannot set its stream up again")
    }

    /// The configuration now, once: for links whose stream is set up with the link.
    public func configurations() async -> AsyncStream<AudioStreamConfiguration?> {
        let now = await configuration()
        return AsyncStream {
            $0.yield(now)
            $0.finish()
        }
    }
}
