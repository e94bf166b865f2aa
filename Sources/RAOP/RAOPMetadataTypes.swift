

/// What a receiver shows: from the `md` TXT key of its `_raop._tcp` record (0 text,
/// 1 artwork, 2 progress), or from `features` (bits 15 artwork, 16 progress, 17 text, as
/// OwnTone and pyatv read them) for an AirPlay 2 receiver, whose record has no `md`.
public struct RAOPMetadataTypes: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let text = RAOPMetadataTypes(rawValue: 1)
    public static let artwork = RAOPMetadataTypes(rawValue: 2)
    public static let progress = RAOPMetadataTypes(rawValue: 4)

    /// The types in `md` (`0,1,2`); unknown numbers are ignored, nil means none.
    public init(txt value: String?) {
        var types: RAOPMetadataTypes = []
        for item in value?.split(separator: ",") ?? [] {
            switch item.trimmingWhitespace {
            case "0": types.insert(.text)
            case "1": types.insert(.artwork)
            case "2": types.insert(.progress)
            default: continue
            }
        }
        self = types
    }

    /// The types `features` says it shows.
    public init(features: AirPlayFeatures) {
        var types: RAOPMetadataTypes = []
        if features.has(15) { types.insert(.artwork) }
        if features.has(16) { types.insert(.progress) }
        if features.has(17) { types.insert(.text) }
        self = types
    }
}
