/// An audio track or subtitle a person can pick.
public struct MediaSelectionOption: Sendable, Hashable, Codable, Identifiable {
    public var id: String
    public var displayName: String
    /// BCP 47 language tag, when the option has a language.
    public var languageTag: String?

    public init(id: String, displayName: String, languageTag: String? = nil) {
        self.id = id
        self.displayName = displayName
        self.languageTag = languageTag
    }
}
