

/// A language option (audio track or subtitle) a person can pick remotely.
public struct MediaLanguageOption: Sendable, Hashable, Codable {
    /// Audio languages are audible, subtitles and captions legible.
    public enum Kind: String, Sendable, Hashable, Codable {
        case audible
        case legible
    }

    public var kind: Kind
    /// Stable within the content.
    public var identifier: String
    public var displayName: String
    /// BCP 47 tag, when the option has a language.
    public var languageTag: String?

    public init(kind: Kind, identifier: String, displayName: String, languageTag: String? = nil) {
        self.kind = kind
        self.identifier = identifier
        self.displayName = displayName
        self.languageTag = languageTag
    }
}
