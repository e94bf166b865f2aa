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

/// What a command handler reports (`MPRemoteCommandHandlerStatus` on the seeds' platform).
public enum MediaCommandStatus: String, Sendable, Hashable, Codable {
    case success
    /// The content the command refers to is gone.
    case noSuchContent
    /// Nothing is playing that the command could act on.
    case noActionableNowPlayingItem
    /// The device the command is for is not there.
    case deviceNotFound
    case commandFailed
    /// The command is not registered, or registered but disabled (never reaches the handler).
    case commandDisabled
}

/// A command a person sends from a remote UI, with its argument.
public enum MediaCommandRequest: Sendable, Hashable {
    case play
    case pause
    case togglePlayPause
    case stop
    case nextTrack
    case previousTrack
    /// Absolute position in seconds.
    case seekToPosition(Double)
    /// The interval actually asked for (not necessarily a preferred one).
    case skipForward(Double)
    case skipBackward(Double)
    case changePlaybackRate(Double)
    case enableLanguageOption(MediaLanguageOption)
    case disableLanguageOption(MediaLanguageOption)

    public var kind: MediaCommand.Kind {
        switch self {
        case .play: .play
        case .pause: .pause
        case .togglePlayPause: .togglePlayPause
        case .stop: .stop
        case .nextTrack: .nextTrack
        case .previousTrack: .previousTrack
        case .seekToPosition: .seekToPosition
        case .skipForward: .skipForward
        case .skipBackward: .skipBackward
        case .changePlaybackRate: .changePlaybackRate
        case .enableLanguageOption: .enableLanguageOption
        case .disableLanguageOption: .disableLanguageOption
        }
    }
}

/// A remote command a session supports, its handler, and whether it is enabled now.
///
/// Build commands with the static factories (`.play { … }`,
/// `.skipForward(preferredIntervals: [15]) { interval in … }`), disable one with
/// ``enabled(_:)`` instead of leaving it out: remote UIs grey it out and the
/// handler is not called. A handler either returns nothing (success) and throws
/// (``MediaCommandStatus/commandFailed``), or returns a ``MediaCommandStatus``;
/// give a multi-statement closure of the second kind its return type
/// (`{ interval -> MediaCommandStatus in … }`).
public struct MediaCommand: Sendable {
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        case play, pause, togglePlayPause, stop, nextTrack, previousTrack, seekToPosition
        case skipForward, skipBackward, changePlaybackRate, enableLanguageOption, disableLanguageOption
    }

    public let kind: Kind
    public var isEnabled: Bool = true
    /// For skip commands: the intervals a UI should offer, in seconds.
    public var preferredIntervals: [Double] = []
    /// For ``Kind/changePlaybackRate``: the rates a UI should offer.
    public var supportedPlaybackRates: [Double] = []
    let handler: @Sendable (MediaCommandRequest) async throws -> MediaCommandStatus

    init(_ kind: Kind, handler: @escaping @Sendable (MediaCommandRequest) async throws -> MediaCommandStatus) {
        self.kind = kind
        self.handler = handler
    }

    /// The same command, enabled or not.
    public func enabled(_ isEnabled: Bool) -> MediaCommand {
        var command = self
        command.isEnabled = isEnabled
        return command
    }

    /// Its description without the handler.
    public var descriptor: MediaCommandDescriptor {
        MediaCommandDescriptor(
            kind: kind, isEnabled: isEnabled, preferredIntervals: preferredIntervals,
            supportedPlaybackRates: supportedPlaybackRates)
    }

    // MARK: Factories without an argument

    private static func simple(_ kind: Kind, _ body: @escaping @Sendable () async throws -> MediaCommandStatus) -> MediaCommand {
        MediaCommand(kind) { _ in try await body() }
    }

    private static func simple(_ kind: Kind, _ body: @escaping @Sendable () async throws -> Void) -> MediaCommand {
        MediaCommand(kind) { _ in
            try await body()
            return .success
        }
    }

    @_disfavoredOverload
    public static func play(_ body: @escaping @Sendable () async throws -> MediaCommandStatus) -> MediaCommand { simple(.play, body) }
    public static func play(_ body: @escaping @Sendable () async throws -> Void) -> MediaCommand { simple(.play, body) }
    @_disfavoredOverload
    public static func pause(_ body: @escaping @Sendable () async throws -> MediaCommandStatus) -> MediaCommand { simple(.pause, body) }
    public static func pause(_ body: @escaping @Sendable () async throws -> Void) -> MediaCommand { simple(.pause, body) }
    @_disfavoredOverload
    public static func togglePlayPause(_ body: @escaping @Sendable () async throws -> MediaCommandStatus) -> MediaCommand {
        simple(.togglePlayPause, body)
    }
    public static func togglePlayPause(_ body: @escaping @Sendable () async throws -> Void) -> MediaCommand { simple(.togglePlayPause, body) }
    @_disfavoredOverload
    public static func stop(_ body: @escaping @Sendable () async throws -> MediaCommandStatus) -> MediaCommand { simple(.stop, body) }
    public static func stop(_ body: @escaping @Sendable () async throws -> Void) -> MediaCommand { simple(.stop, body) }
    @_disfavoredOverload
    public static func next(_ body: @escaping @Sendable () async throws -> MediaCommandStatus) -> MediaCommand { simple(.nextTrack, body) }
    public static func next(_ body: @escaping @Sendable () async throws -> Void) -> MediaCommand { simple(.nextTrack, body) }
    @_disfavoredOverload
    public static func previous(_ body: @escaping @Sendable () async throws -> MediaCommandStatus) -> MediaCommand { simple(.previousTrack, body) }
    public static func previous(_ body: @escaping @Sendable () async throws -> Void) -> MediaCommand { simple(.previousTrack, body) }

    // MARK: Factories with an argument

    private static func valued<Value: Sendable>(
        _ kind: Kind, extract: @escaping @Sendable (MediaCommandRequest) -> Value?,
        _ body: @escaping @Sendable (Value) async throws -> MediaCommandStatus
    ) -> MediaCommand {
        MediaCommand(kind) { request in
            guard let value = extract(request) else { return .commandFailed }
            return try await body(value)
        }
    }

    private static func position(_ request: MediaCommandRequest) -> Double? {
        switch request {
        case .seekToPosition(let value), .skipForward(let value), .skipBackward(let value), .changePlaybackRate(let value): value
        default: nil
        }
    }

    private static func option(_ request: MediaCommandRequest) -> MediaLanguageOption? {
        switch request {
        case .enableLanguageOption(let option), .disableLanguageOption(let option): option
        default: nil
        }
    }

    /// Seek to an absolute position (seconds).
    @_disfavoredOverload
    public static func seekToPosition(_ body: @escaping @Sendable (Double) async throws -> MediaCommandStatus) -> MediaCommand {
        valued(.seekToPosition, extract: position, body)
    }
    public static func seekToPosition(_ body: @escaping @Sendable (Double) async throws -> Void) -> MediaCommand {
        valued(.seekToPosition, extract: position) { try await body($0); return .success }
    }

    /// Skip ahead; the handler gets the interval asked for.
    @_disfavoredOverload
    public static func skipForward(
        preferredIntervals: [Double] = [15], _ body: @escaping @Sendable (Double) async throws -> MediaCommandStatus
    ) -> MediaCommand {
        var command = valued(.skipForward, extract: position, body)
        command.preferredIntervals = preferredIntervals
        return command
    }
    public static func skipForward(preferredIntervals: [Double] = [15], _ body: @escaping @Sendable (Double) async throws -> Void) -> MediaCommand {
        skipForward(preferredIntervals: preferredIntervals) { try await body($0); return .success }
    }

    /// Skip back; the handler gets the interval asked for.
    @_disfavoredOverload
    public static func skipBackward(
        preferredIntervals: [Double] = [15], _ body: @escaping @Sendable (Double) async throws -> MediaCommandStatus
    ) -> MediaCommand {
        var command = valued(.skipBackward, extract: position, body)
        command.preferredIntervals = preferredIntervals
        return command
    }
    public static func skipBackward(preferredIntervals: [Double] = [15], _ body: @escaping @Sendable (Double) async throws -> Void) -> MediaCommand {
        skipBackward(preferredIntervals: preferredIntervals) { try await body($0); return .success }
    }

    /// Change the playback rate.
    @_disfavoredOverload
    public static func changePlaybackRate(
        supportedPlaybackRates: [Double] = [0.5, 1, 1.5, 2], _ body: @escaping @Sendable (Double) async throws -> MediaCommandStatus
    ) -> MediaCommand {
        var command = valued(.changePlaybackRate, extract: position, body)
        command.supportedPlaybackRates = supportedPlaybackRates
        return command
    }
    public static func changePlaybackRate(
        supportedPlaybackRates: [Double] = [0.5, 1, 1.5, 2], _ body: @escaping @Sendable (Double) async throws -> Void
    ) -> MediaCommand {
        changePlaybackRate(supportedPlaybackRates: supportedPlaybackRates) { try await body($0); return .success }
    }

    /// Select a language option (an audio language or a subtitle).
    @_disfavoredOverload
    public static func enableLanguageOption(_ body: @escaping @Sendable (MediaLanguageOption) async throws -> MediaCommandStatus) -> MediaCommand {
        valued(.enableLanguageOption, extract: option, body)
    }
    public static func enableLanguageOption(_ body: @escaping @Sendable (MediaLanguageOption) async throws -> Void) -> MediaCommand {
        valued(.enableLanguageOption, extract: option) { try await body($0); return .success }
    }

    /// Deselect a language option (subtitles off), where its group allows an empty selection.
    @_disfavoredOverload
    public static func disableLanguageOption(_ body: @escaping @Sendable (MediaLanguageOption) async throws -> MediaCommandStatus) -> MediaCommand {
        valued(.disableLanguageOption, extract: option, body)
    }
    public static func disableLanguageOption(_ body: @escaping @Sendable (MediaLanguageOption) async throws -> Void) -> MediaCommand {
        valued(.disableLanguageOption, extract: option) { try await body($0); return .success }
    }
}

/// A command as remote UIs see it: kind, enabled flag, intervals and rates.
public struct MediaCommandDescriptor: Sendable, Hashable, Codable {
    public var kind: MediaCommand.Kind
    public var isEnabled: Bool
    public var preferredIntervals: [Double]
    public var supportedPlaybackRates: [Double]
}
