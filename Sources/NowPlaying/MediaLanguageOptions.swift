

/// The language options of the content and what is selected now.
public struct MediaLanguageOptions: Sendable, Hashable, Codable {
    public var groups: [MediaLanguageOptionGroup]
    /// The selected options, at most one per group.
    public var current: [MediaLanguageOption]

    public init(groups: [MediaLanguageOptionGroup] = [], current: [MediaLanguageOption] = []) {
        self.groups = groups
        self.current = current
    }

    func group(containing option: MediaLanguageOption) -> MediaLanguageOptionGroup? {
        groups.first { $0.options.contains(option) }
    }
}
