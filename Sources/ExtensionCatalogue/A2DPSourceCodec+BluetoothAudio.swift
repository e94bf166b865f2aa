#if Bluetooth
public import BlueZTransport
public import BluetoothAudio
public import Logging

extension A2DPSourceCodec {
    /// One of BluetoothAudio's codecs as an A2DP source endpoint offers it.
    public init(_ codec: A2DPCodec) {
        self.init(
            name: codec.rawValue, codec: codec.codecByte, capabilities: codec.sourceCapabilities,
            select: { offered in try codec.configuration(from: offered) },
            accepts: { bytes in codec.accepts(bytes) })
    }

    /// SBC as MediaRoute's A2DP source offers it (``SBCCapabilities/source``), choosing with
    /// ``SBCCapabilities/configuration()``.
    public static let sbc = A2DPSourceCodec(A2DPCodec.sbc)

    /// The endpoints to register for `[bluetooth] codecs` (names, most preferred first): those
    /// whose library is on the box, each missing one a notice line, SBC always (last unless named).
    public static func offered(preference names: [String], logger: Logger) -> [A2DPSourceCodec] {
        var codecs = names.compactMap(A2DPCodec.init(rawValue:))
        if !codecs.contains(.sbc) { codecs.append(.sbc) }
        return codecs.compactMap { codec in
            if let notice = codec.missingLibrary() {
                logger.notice("\(notice)")
                return nil
            }
            return A2DPSourceCodec(codec)
        }
    }
}
#endif
