/// Encodes PCM for a Bluetooth transport and cuts the result into packets that fit its MTU.
///
/// Every encoder takes interleaved stereo S16LE at the configuration's rate, keeps what does
/// not fill a frame for the next call, and can step its bit rate down when the link is
/// congested and back up when it recovers (``LinkAdaptation`` decides when).
public protocol BluetoothAudioEncoder: Sendable {
    /// PCM bytes (interleaved S16LE) one encoded frame takes.
    var pcmBytesPerFrame: Int { get }
    /// Encodes whole frames from `pcm`; returns the packets that are full (as many
    /// frames as the MTU takes). Leftover PCM and frames wait for the next call.
    func packets(from pcm: [UInt8]) throws(BluetoothAudioError) -> [[UInt8]]
    /// The frames still waiting, as a last (shorter) packet.
    func flush() -> [[UInt8]]
    /// The bit rate it produces now, in bits per second.
    var bitrate: Int { get }
    /// Steps the bit rate one notch down (`down`) or up; false when it is already at that end
    /// (or the codec has one rate, as aptX).
    func stepBitrate(down: Bool) -> Bool
    /// How many packets wait in the socket's send queue now: LDAC's adaptive bit rate decides
    /// from it itself; the others ignore it.
    func observeQueue(packets: Int)
}

extension BluetoothAudioEncoder {
    public func stepBitrate(down: Bool) -> Bool { false }
    public func observeQueue(packets: Int) {}
}

/// The encoder for a transport's codec and configuration.
/// - Throws: ``BluetoothAudioError`` naming the codec when we cannot produce it.
public func makeBluetoothAudioEncoder(codec: BluetoothCodec, configuration: [UInt8], mtu: Int) throws(BluetoothAudioError) -> any BluetoothAudioEncoder {
    let byte: UInt8
    switch codec {
    case .sbc: byte = 0x00
    case .aac: byte = 0x02
    case .vendor(let value): byte = value
    default: throw BluetoothAudioError("the speaker negotiated \(codec), which MediaRoute cannot encode")
    }
    guard let a2dp = A2DPCodec(codecByte: byte, configuration: configuration) else {
        throw BluetoothAudioError("the speaker negotiated \(codec), which MediaRoute cannot encode")
    }
    return try makeBluetoothAudioEncoder(a2dp, configuration: configuration, mtu: mtu)
}

/// The encoder for one of MediaRoute's A2DP codecs.
public func makeBluetoothAudioEncoder(_ codec: A2DPCodec, configuration: [UInt8], mtu: Int) throws(BluetoothAudioError) -> any BluetoothAudioEncoder {
    switch codec {
    case .sbc: try SBCEncoder(a2dpConfiguration: configuration, mtu: mtu)
    case .aac: try AACEncoder(a2dpConfiguration: configuration, mtu: mtu)
    case .aptx, .aptxHD: try AptXEncoder(a2dpConfiguration: configuration, highDefinition: codec == .aptxHD, mtu: mtu)
    case .ldac: try LDACEncoder(a2dpConfiguration: configuration, mtu: mtu)
    }
}

/// The 12-byte RTP header of A2DP media packets: version 2, payload type 96, the marker bit
/// when asked, the sequence number, the timestamp (in samples) and a fixed SSRC.
@inline(__always)
func appendRTPHeader(_ packet: inout [UInt8], sequence: UInt16, timestamp: UInt32, marker: Bool = false) {
    packet.append(0x80)
    packet.append(marker ? 0x80 | 96 : 96)
    packet.append(UInt8(truncatingIfNeeded: sequence >> 8))
    packet.append(UInt8(truncatingIfNeeded: sequence))
    packet.append(UInt8(truncatingIfNeeded: timestamp >> 24))
    packet.append(UInt8(truncatingIfNeeded: timestamp >> 16))
    packet.append(UInt8(truncatingIfNeeded: timestamp >> 8))
    packet.append(UInt8(truncatingIfNeeded: timestamp))
    packet += [0, 0, 0, 1]
}
