import CSbc
import Synchronization

/// Encodes PCM for a Bluetooth transport and cuts the result into packets that fit its MTU.
public protocol BluetoothAudioEncoder: Sendable {
    /// PCM bytes (interleaved S16LE) one encoded frame takes.
    var pcmBytesPerFrame: Int { get }
    /// Encodes whole frames from `pcm`; returns the packets that are full (as many
    /// frames as the MTU takes). Leftover PCM and frames wait for the next call.
    func packets(from pcm: [UInt8]) throws(BluetoothAudioError) -> [[UInt8]]
    /// The frames still waiting, as a last (shorter) packet.
    func flush() -> [[UInt8]]
}

/// The encoder for a transport's codec and configuration.
/// - Throws: ``BluetoothAudioError`` naming the codec when we cannot produce it.
public func makeBluetoothAudioEncoder(codec: BluetoothCodec, configuration: [UInt8], mtu: Int) throws(BluetoothAudioError) -> any BluetoothAudioEncoder {
    switch codec {
    case .sbc:
        return try SBCEncoder(a2dpConfiguration: configuration, mtu: mtu)
    default:
        throw BluetoothAudioError("the speaker negotiated \(codec), which MediaRoute cannot encode (only SBC)")
    }
}
