import CSbc
import Synchronization

/// The codec a `MediaTransport1` negotiated (its `Codec` byte), as A2DP numbers them.
public enum BluetoothCodec: Sendable, Hashable, CustomStringConvertible {
    case sbc
    case mpeg12
    case aac
    case atrac
    case lc3
    case vendor(UInt8)

    public init(a2dpCodec byte: UInt8, bap: Bool = false) {
        switch (byte, bap) {
        case (0x00, false): self = .sbc
        case (0x01, false): self = .mpeg12
        case (0x02, false): self = .aac
        case (0x04, false): self = .atrac
        case (0x06, true): self = .lc3
        default: self = .vendor(byte)
        }
    }

    public var description: String {
        switch self {
        case .sbc: "SBC"
        case .mpeg12: "MPEG-1,2 Audio"
        case .aac: "AAC"
        case .atrac: "ATRAC"
        case .lc3: "LC3"
        case .vendor(let byte): "vendor codec 0x\(String(byte, radix: 16))"
        }
    }
}
