/// Which services a paired device may open on the box when BlueZ asks the agent
/// (`AuthorizeService`): the profiles MediaRoute uses, and nothing else.
///
/// Paired speakers are not marked `Trusted` (BlueZ would then authorize every service
/// without asking), so a device that was once paired as a speaker cannot later open
/// HID (a keyboard typing into the box), PAN, OBEX or a serial port through us.
public enum ServiceAuthorization {
    /// 16-bit UUIDs of what a speaker may open: A2DP and its AVDTP signalling, AVRCP, and the
    /// LE Audio services (volume, media control, audio stream and capability services).
    public static let allowed: Set<UInt16> = [
        0x0019,  // AVDTP
        0x0017,  // AVCTP
        0x110A, 0x110B, 0x110D,  // A2DP Source, Sink, Advanced Audio Distribution
        0x110C, 0x110E, 0x110F,  // AVRCP Target, AVRCP, AVRCP Controller
        0x1800, 0x1801, 0x180A, 0x180F,  // GAP, GATT, Device Information, Battery
        0x1843, 0x1844, 0x1845, 0x1846,  // Audio Input Control, Volume Control, Volume Offset Control, Coordinated Set
        0x1848, 0x1849, 0x184E, 0x184F, 0x1850, 0x1853,  // Media Control, Generic Media Control, ASCS, BASS, PACS, CAS
    ]

    /// The Bluetooth base UUID's tail: `0000XXXX-0000-1000-8000-00805f9b34fb`.
    private static let baseTail = "-0000-1000-8000-00805f9b34fb"

    /// Whether `uuid` (as BlueZ writes it: 128-bit, any case; or a bare 16-bit hex) may be opened.
    public static func isAllowed(_ uuid: String) -> Bool {
        guard let short = shortForm(uuid) else { return false }
        return allowed.contains(short)
    }

    /// The 16-bit form of a UUID on the Bluetooth base, or nil for any other.
    static func shortForm(_ uuid: String) -> UInt16? {
        let text = uuid.lowercased()
        if text.count <= 4 { return UInt16(text, radix: 16) }
        guard text.count == 36, text.hasPrefix("0000"), text.hasSuffix(baseTail) else { return nil }
        return UInt16(text.dropFirst(4).prefix(4), radix: 16)
    }
}
