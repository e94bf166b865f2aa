

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
