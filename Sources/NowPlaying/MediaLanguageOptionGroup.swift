

/// A group of mutually exclusive options (all audio languages, or all subtitles).
public struct MediaLanguageOptionGroup: Sendable, Hashable, Codable {
    public var options: [MediaLanguageOption]
    public var defaultOption: MediaLanguageOption?
    /// Whether nothing may be selected (subtitles off); audio groups usually do not.
    public var allowsEmptySelection: Bool

    public init(options: [MediaLanguageOption], defaultOption: MediaLanguageOption? = nil, allowsEmptySelection: Bool) {
        self.options = options
        self.defaultOption = defaultOption
        self.allowsEmptySelection = allowsEmptySelection
    }
}
