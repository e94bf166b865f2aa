#if Bluetooth
public import BlueZTransport
import BluetoothAudio

extension A2DPSourceCodec {
    /// SBC as MediaRoute's A2DP source offers it (``SBCCapabilities/source``), choosing with
    /// ``SBCCapabilities/configuration()``.
    public static let sbc = A2DPSourceCodec(
        codec: 0x00, capabilities: SBCCapabilities.source.bytes,
        select: { offered in
            guard let capabilities = SBCCapabilities(bytes: offered) else {
                throw BluetoothAudioError("SBC capabilities are 4 bytes, not \(offered.count)")
            }
            return try capabilities.configuration().bytes
        },
        accepts: { bytes in SBCCapabilities(bytes: bytes)?.isConfiguration(within: .source) == true })
}
#endif
