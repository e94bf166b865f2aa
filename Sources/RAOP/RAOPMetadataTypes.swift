

/// What a receiver's `md` TXT key says it shows: 0 text, 1 artwork, 2 progress.
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
}
