#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import DBus
public import NowPlaying

/// The MPRIS view of one Now Playing session: pure mapping, no bus.
public struct MPRISState: Sendable {
    public let info: NowPlayingInfo?

    public init(_ info: NowPlayingInfo?) {
        self.info = info
    }

    /// `mpris:trackid`: an object path made from the session and content ids
    /// (bytes outside `[A-Za-z0-9]` hex-escaped, so any id gives a valid path).
    public var trackID: DBusObjectPath {
        guard let info, let content = info.content else { return MPRISNames.noTrack }
        return DBusObjectPath("/org/mediaroute/track/" + Self.pathElement(info.sessionID) + "/" + Self.pathElement(content.id))
            ?? MPRISNames.noTrack
    }

    static func pathElement(_ text: String) -> String {
        guard !text.isEmpty else { return "_" }
        var element = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                element.append(Character(UnicodeScalar(byte)))
            default:
                let digits = Array("0123456789abcdef")
                element += "_" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0x0F)])
            }
        }
        return element
    }

    public var playbackStatus: String {
        guard let playback = info?.playback else { return "Stopped" }
        switch playback.state {
        case .playing: return "Playing"
        case .paused: return "Paused"
        case .stopped: return "Stopped"
        }
    }

    /// Length in seconds when finite.
    public var length: Double? { info?.content?.duration?.seconds }

    /// Position in seconds at `date`.
    public func position(at date: Date) -> Double {
        info?.playback?.elapsedTime(at: date, duration: length) ?? 0
    }

    public static func microseconds(_ seconds: Double) -> Int64 {
        guard seconds.isFinite else { return 0 }
        return Int64((seconds * 1_000_000).rounded())
    }

    /// MPRIS Rate: the playing rate, 1 when not playing (Rate 0 is reserved for "paused").
    public var rate: Double {
        guard let playback = info?.playback, playback.state.isPlaying else { return 1 }
        return playback.state.rate
    }

    public var minimumRate: Double { rates.min() ?? 1 }
    public var maximumRate: Double { rates.max() ?? 1 }

    private var rates: [Double] {
        guard let info, info.isEnabled(.changePlaybackRate) else { return [] }
        return (info.command(.changePlaybackRate)?.supportedPlaybackRates ?? []) + [1]
    }

    /// The first device with an absolute volume.
    public var volumeDevice: RemoteMediaDeviceDescriptor? { info?.devices.first { $0.volume != nil } }

    public var volume: Double { volumeDevice?.volume.map(Double.init) ?? 0 }

    public var canControl: Bool { info?.commands.contains { $0.isEnabled } ?? false }
    public var canGoNext: Bool { canControl && info!.isEnabled(.nextTrack) }
    public var canGoPrevious: Bool { canControl && info!.isEnabled(.previousTrack) }
    public var canPlay: Bool { canControl && (info!.isEnabled(.play) || info!.isEnabled(.togglePlayPause)) }
    public var canPause: Bool { canControl && (info!.isEnabled(.pause) || info!.isEnabled(.togglePlayPause)) }
    public var canSeek: Bool {
        canControl && (info!.isEnabled(.seekToPosition) || info!.isEnabled(.skipForward) || info!.isEnabled(.skipBackward))
    }

    /// `Metadata` (a{sv}): the track id always; title, artist, album, length and art when known.
    public func metadata(artURL: String?) -> DBusValue {
        var values: [String: DBusValue] = ["mpris:trackid": .objectPath(trackID)]
        if let content = info?.content {
            if let title = content.title { values["xesam:title"] = .string(title) }
            if let artist = content.artist { values["xesam:artist"] = .strings([artist]) }
            if let album = content.album { values["xesam:album"] = .string(album) }
            if let length { values["mpris:length"] = .int64(Self.microseconds(length)) }
            if content.isExplicit { values["mediaroute:explicit"] = .bool(true) }
            if content.duration == .live { values["mediaroute:live"] = .bool(true) }
        }
        if let artURL { values["mpris:artUrl"] = .string(artURL) }
        return .properties(values)
    }

    /// The Player properties that `PropertiesChanged` carries (not Position, which MPRIS never signals).
    public func playerProperties(artURL: String?) -> [String: DBusValue] {
        [
            "PlaybackStatus": .string(playbackStatus),
            "Rate": .double(rate),
            "MinimumRate": .double(minimumRate),
            "MaximumRate": .double(maximumRate),
            "Metadata": metadata(artURL: artURL),
            "Volume": .double(volume),
            "CanGoNext": .bool(canGoNext),
            "CanGoPrevious": .bool(canGoPrevious),
            "CanPlay": .bool(canPlay),
            "CanPause": .bool(canPause),
            "CanSeek": .bool(canSeek),
            "CanControl": .bool(canControl),
        ]
    }

    /// The extra interface's properties.
    public var extraProperties: [String: DBusValue] {
        let devices: [DBusValue] = (info?.devices ?? []).map { device in
            .properties([
                "Id": .string(device.id), "Name": .string(device.name), "Type": .string(device.type.rawValue),
                "Volume": .double(device.volume.map(Double.init) ?? -1), "RelativeVolume": .bool(device.supportsRelativeVolume),
            ])
        }
        var options: [DBusValue] = []
        for group in info?.languageOptions.groups ?? [] {
            for option in group.options {
                options.append(.properties([
                    "Kind": .string(option.kind.rawValue), "Identifier": .string(option.identifier),
                    "DisplayName": .string(option.displayName), "LanguageTag": .string(option.languageTag ?? ""),
                    "Selected": .bool(info?.languageOptions.current.contains(option) ?? false),
                    "AllowsEmptySelection": .bool(group.allowsEmptySelection),
                ]))
            }
        }
        func intervals(_ kind: MediaCommand.Kind) -> DBusValue {
            .array(elementSignature: "d", (info?.isEnabled(kind) == true ? info?.command(kind)?.preferredIntervals ?? [] : []).map(DBusValue.double))
        }
        return [
            "SessionId": .string(info?.sessionID ?? ""),
            "Devices": .array(elementSignature: "a{sv}", devices),
            "LanguageOptions": .array(elementSignature: "a{sv}", options),
            "SkipForwardIntervals": intervals(.skipForward),
            "SkipBackwardIntervals": intervals(.skipBackward),
        ]
    }
}
