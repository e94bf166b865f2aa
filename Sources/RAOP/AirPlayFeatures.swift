/// What an AirPlay receiver says it can do: the 64-bit `features` (`_airplay._tcp`) or `ft`
/// (`_raop._tcp`) TXT value — `0x445F8A00,0x1C340` is the low then the high 32 bits — with
/// its `flags` and `acl`, read as pyatv and OwnTone read them.
public struct AirPlayFeatures: Sendable, Hashable {
    public var bits: UInt64
    /// The `_airplay._tcp` `flags` value (bit 3: a PIN is required).
    public var flags: UInt64
    /// The access control level (`acl`): 0 anyone; otherwise limited (the home's members).
    public var accessControl: Int

    public static let audio = 9
    public static let fairPlay = 14
    public static let mfiAuthentication = 26
    public static let legacyPairing = 27
    public static let unifiedMediaControl = 38
    public static let bufferedAudio = 40
    public static let ptp = 41
    public static let homeKitPairing = 46
    public static let coreUtilsPairing = 48

    public init(bits: UInt64, flags: UInt64 = 0, accessControl: Int = 0) {
        self.bits = bits
        self.flags = flags
        self.accessControl = accessControl
    }

    /// From a TXT record's attributes; nil when it carries no `features`/`ft` value that parses.
    public init?(attributes: [String: String]) {
        guard let text = attributes["features"] ?? attributes["ft"], let bits = Self.parse(text) else { return nil }
        self.init(bits: bits, flags: attributes["flags"].flatMap(Self.parseNumber) ?? 0, accessControl: attributes["acl"].flatMap { Int($0) } ?? 0)
    }

    /// `0xLOW,0xHIGH`, `0xVALUE` or a decimal value; nil for anything else (at most two parts).
    static func parse(_ text: String) -> UInt64? {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let low = parseNumber(String(parts[0])) else { return nil }
        guard parts.count == 2 else { return low }
        guard low <= 0xFFFF_FFFF, let high = parseNumber(String(parts[1])), high <= 0xFFFF_FFFF else { return nil }
        return high << 32 | low
    }

    static func parseNumber(_ text: String) -> UInt64? {
        let trimmed = String(text.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
        guard trimmed.count <= 20 else { return nil }
        if trimmed.lowercased().hasPrefix("0x") { return UInt64(trimmed.dropFirst(2), radix: 16) }
        return UInt64(trimmed)
    }

    public func has(_ bit: Int) -> Bool { bit >= 0 && bit < 64 && bits & (1 << UInt64(bit)) != 0 }

    /// The protocol to speak by default: AirPlay 2 where the receiver pairs and encrypts as
    /// AirPlay 2 does (bit 48), AirPlay 1 otherwise.
    public var prefersAirPlay2: Bool { has(Self.coreUtilsPairing) }

    /// Whether its timing is PTP (bit 41) rather than NTP.
    public var usesPTP: Bool { has(Self.ptp) }

    /// Whether pairing needs the PIN the receiver shows (`flags` bit 3).
    public var requiresPIN: Bool { flags & 0x8 != 0 }

    /// Why a sender like MediaRoute cannot play to it, or nil: no audio, access limited to
    /// its home's members, or only FairPlay/MFi-authenticated senders admitted.
    public var unplayableReason: String? {
        if !has(Self.audio) { return "it does not take audio over AirPlay" }
        if accessControl != 0 { return "its access is limited to the members of its home" }
        if (has(Self.fairPlay) || has(Self.mfiAuthentication)) && !has(Self.coreUtilsPairing) && !has(Self.homeKitPairing) && !has(Self.legacyPairing) {
            return "it admits only FairPlay-authenticated senders"
        }
        return nil
    }
}
