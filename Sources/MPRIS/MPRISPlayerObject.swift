#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DBus
import NowPlaying

/// `/org/mpris/MediaPlayer2`: `org.mpris.MediaPlayer2`, `org.mpris.MediaPlayer2.Player`
/// and MediaRoute's extras (`org.mediaroute.NowPlaying1`), all answering from
/// the bridge's current session.
struct MPRISPlayerObject {
    let bridge: MPRISBridge
    let identity: String

    static func invalidArgs(_ message: String) -> DBusError {
        DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: message)
    }

    static func statusError(_ status: MediaCommandStatus) -> DBusError {
        let name = String(status.rawValue.prefix(1).uppercased()) + status.rawValue.dropFirst()
        return DBusError(name: "org.mediaroute.Error.\(name)", message: "the command returned \(status.rawValue)")
    }

    var object: DBusObject {
        let bridge = self.bridge
        let identity = self.identity
        func command(_ name: String, _ request: MediaCommandRequest) -> DBusMethod {
            // MPRIS: a command that cannot be carried out has no effect and is not an error.
            DBusMethod(name) { _ in
                await bridge.perform(request)
                return []
            }
        }
        func player(_ name: String, _ signature: String, _ value: @escaping @Sendable (MPRISState) -> DBusValue) -> DBusProperty {
            DBusProperty(name, signature: signature) { await value(bridge.state) }
        }
        func extra(_ name: String, _ signature: String) -> DBusProperty {
            DBusProperty(name, signature: signature) { await bridge.state.extraProperties[name] ?? .string("") }
        }
        func status(_ body: @escaping @Sendable (DBusMethodCall) async throws -> MediaCommandStatus) -> @Sendable (DBusMethodCall) async throws -> [DBusValue] {
            { call in
                let status = try await body(call)
                guard status == .success else { throw Self.statusError(status) }
                return []
            }
        }
        return DBusObject(interfaces: [
            DBusInterface(MPRISNames.root, methods: [
                DBusMethod("Raise") { _ in [] },
                DBusMethod("Quit") { _ in [] },
            ], properties: [
                DBusProperty("CanQuit", signature: "b") { .bool(false) },
                DBusProperty("CanRaise", signature: "b") { .bool(false) },
                DBusProperty("HasTrackList", signature: "b") { .bool(false) },
                DBusProperty("Identity", signature: "s") { .string(identity) },
                DBusProperty("SupportedUriSchemes", signature: "as") { .strings([]) },
                DBusProperty("SupportedMimeTypes", signature: "as") { .strings([]) },
            ]),
            DBusInterface(MPRISNames.player, methods: [
                command("Next", .nextTrack),
                command("Previous", .previousTrack),
                command("Pause", .pause),
                command("PlayPause", .togglePlayPause),
                command("Stop", .stop),
                command("Play", .play),
                DBusMethod("Seek", inputs: [DBusArgument("Offset", "x")]) { call in
                    await bridge.seek(by: Double(call.arguments.first?.integer ?? 0) / 1_000_000)
                    return []
                },
                DBusMethod("SetPosition", inputs: [DBusArgument("TrackId", "o"), DBusArgument("Position", "x")]) { call in
                    guard let track = call.arguments.first?.objectPath, let position = call.arguments.last?.integer else {
                        throw Self.invalidArgs("SetPosition takes (o, x)")
                    }
                    await bridge.setPosition(Double(position) / 1_000_000, track: track)
                    return []
                },
                DBusMethod("OpenUri", inputs: [DBusArgument("Uri", "s")]) { _ in
                    throw DBusError(name: "org.freedesktop.DBus.Error.NotSupported", message: "start playback through org.mediaroute.Session1")
                },
            ], properties: [
                player("PlaybackStatus", "s") { .string($0.playbackStatus) },
                DBusProperty("Rate", signature: "d", get: { await .double(bridge.state.rate) }, set: { value in
                    guard let rate = value.double, rate.isFinite else { throw Self.invalidArgs("Rate must be a number") }
                    try await bridge.setRate(rate)
                }),
                player("MinimumRate", "d") { .double($0.minimumRate) },
                player("MaximumRate", "d") { .double($0.maximumRate) },
                DBusProperty("Metadata", signature: "a{sv}") { await bridge.metadata },
                DBusProperty("Volume", signature: "d", get: { await .double(bridge.state.volume) }, set: { value in
                    guard let level = value.double, !level.isNaN else { throw Self.invalidArgs("Volume must be a number") }
                    await bridge.setVolume(level)
                }),
                DBusProperty("Position", signature: "x") { await .int64(MPRISState.microseconds(bridge.position)) },
                player("CanGoNext", "b") { .bool($0.canGoNext) },
                player("CanGoPrevious", "b") { .bool($0.canGoPrevious) },
                player("CanPlay", "b") { .bool($0.canPlay) },
                player("CanPause", "b") { .bool($0.canPause) },
                player("CanSeek", "b") { .bool($0.canSeek) },
                player("CanControl", "b") { .bool($0.canControl) },
            ], signals: [
                DBusSignalDescription("Seeked", arguments: [DBusArgument("Position", "x")]),
            ]),
            DBusInterface(MPRISNames.extras, methods: [
                DBusMethod("SetDeviceVolume", inputs: [DBusArgument("device", "s"), DBusArgument("level", "d")], handler: status { call in
                    guard let device = call.arguments.first?.string, let level = call.arguments.last?.double else {
                        throw Self.invalidArgs("SetDeviceVolume takes (s, d)")
                    }
                    return await bridge.center.setVolume(Float(level), device: device, onSession: bridge.sessionID)
                }),
                DBusMethod("ChangeDeviceVolume", inputs: [DBusArgument("device", "s"), DBusArgument("steps", "i")], handler: status { call in
                    guard let device = call.arguments.first?.string, let steps = call.arguments.last?.integer else {
                        throw Self.invalidArgs("ChangeDeviceVolume takes (s, i)")
                    }
                    return await bridge.center.changeVolume(by: Int(steps), device: device, onSession: bridge.sessionID)
                }),
                DBusMethod("EnableLanguageOption", inputs: [DBusArgument("identifier", "s")], handler: status { call in
                    await bridge.language(call.arguments.first?.string ?? "", enable: true)
                }),
                DBusMethod("DisableLanguageOption", inputs: [DBusArgument("identifier", "s")], handler: status { call in
                    await bridge.language(call.arguments.first?.string ?? "", enable: false)
                }),
                DBusMethod("SkipForward", inputs: [DBusArgument("seconds", "d")], handler: status { call in
                    await bridge.perform(.skipForward(call.arguments.first?.double ?? 0))
                }),
                DBusMethod("SkipBackward", inputs: [DBusArgument("seconds", "d")], handler: status { call in
                    await bridge.perform(.skipBackward(call.arguments.first?.double ?? 0))
                }),
            ], properties: [
                extra("SessionId", "s"), extra("Devices", "aa{sv}"), extra("LanguageOptions", "aa{sv}"),
                extra("SkipForwardIntervals", "ad"), extra("SkipBackwardIntervals", "ad"),
            ]),
        ])
    }
}
