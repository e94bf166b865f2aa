#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DBus
import MediaRouteBusAPI
import MediaDevice
import RouteSystem

/// `/org/mediaroute/session/<uuid>`: `org.mediaroute.Session1`, one per active route:
/// start and stop a URL session on it, command and observe playback, and use its data channels.
struct SessionObject {
    let daemon: RoutingDaemon
    let route: ActiveRoute

    static func properties(
        of route: ActiveRoute, devicePath: DBusObjectPath, control: PlaybackControl?, url: String?, application: String? = nil,
        protocolReason: String? = nil
    ) -> [String: DBusValue] {
        let snapshot = control?.snapshot
        return [
            "Id": .string(route.session.id.uuidString),
            "DeviceId": .string(route.device.id),
            "Device": .objectPath(devicePath),
            "Protocol": .string(route.protocolType.identifier),
            "PlaybackState": .string(snapshot?.state.rawValue ?? "idle"),
            "Position": .double(control?.currentPlaybackPosition ?? 0),
            "Rate": .double(snapshot?.playbackSpeed ?? 0),
            "Duration": .double(snapshot?.timeRange?.upperBound ?? 0),
            "Title": .string(snapshot?.metadata.title ?? ""),
            "Url": .string(url ?? ""),
            "Application": .string(application ?? ""),
            "ProtocolReason": .string(protocolReason ?? ""),
        ]
    }

    var object: DBusObject {
        let daemon = self.daemon
        let session = route.session
        @Sendable func playback(
            _ body: @escaping @Sendable (DBusMethodCall, PlaybackControl) -> Void
        ) -> @Sendable (DBusMethodCall) async throws -> [DBusValue] {
            { call in
                guard let control = await daemon.system.playbackControl(for: session) else {
                    throw MediaDeviceError(.sessionFailed, "no URL session is playing").dbusError
                }
                body(call, control)
                return []
            }
        }
        func property(_ name: String, _ signature: String) -> DBusProperty {
            DBusProperty(name, signature: signature) { await daemon.sessionProperties(session)?[name] ?? .string("") }
        }
        return DBusObject(interfaces: [
            DBusInterface(DaemonNames.session, methods: [
                DBusMethod("Start", inputs: [DBusArgument("url", "s"), DBusArgument("mode", "s")]) { call in
                    guard let text = call.arguments[0].string, let url = URL(string: text), url.scheme != nil else {
                        throw MediaDeviceError(.invalidArgument, "not a URL").dbusError
                    }
                    let mode = call.arguments[1].string ?? "player"
                    guard mode == "player" || mode == "application" else {
                        throw MediaDeviceError(.invalidArgument, "mode must be player or application").dbusError
                    }
                    try await daemon.startSession(session, url: url, application: mode == "application" ? call.sender : nil)
                    return []
                },
                DBusMethod("StartWithMetadata", inputs: [DBusArgument("url", "s"), DBusArgument("mode", "s"), DBusArgument("metadata", "a{sv}")]) { call in
                    guard let text = call.arguments[0].string, let url = URL(string: text), url.scheme != nil else {
                        throw MediaDeviceError(.invalidArgument, "not a URL").dbusError
                    }
                    let mode = call.arguments[1].string ?? "player"
                    guard mode == "player" || mode == "application" else {
                        throw MediaDeviceError(.invalidArgument, "mode must be player or application").dbusError
                    }
                    let metadata = try await mapErrors { try SessionMetadataCodec.decode(call.arguments[2]) }
                    try await daemon.startSession(session, url: url, application: mode == "application" ? call.sender : nil, metadata: metadata)
                    return []
                },
                DBusMethod("SelectAudible", inputs: [DBusArgument("option", "s")], handler: playback { call, control in
                    let id = call.arguments[0].string ?? ""
                    control.currentAudibleOption = control.audibleOptions.first { $0.id == id }
                }),
                DBusMethod("SelectLegible", inputs: [DBusArgument("option", "s")], handler: playback { call, control in
                    let id = call.arguments[0].string ?? ""
                    control.currentLegibleOption = control.legibleOptions.first { $0.id == id }
                }),
                DBusMethod("Stop") { _ in
                    await daemon.system.stopSession(on: session)
                    return []
                },
                DBusMethod("Play", handler: playback { _, control in control.play() }),
                DBusMethod("Pause", handler: playback { _, control in control.pause() }),
                DBusMethod("Seek", inputs: [DBusArgument("position", "d")], handler: playback { call, control in
                    control.seek(to: call.arguments[0].double ?? 0)
                }),
                DBusMethod("SetRate", inputs: [DBusArgument("rate", "d")], handler: playback { call, control in
                    control.playbackSpeed = call.arguments[0].double ?? 1
                }),
                DBusMethod("Send", inputs: [DBusArgument("data", "ay")]) { call in
                    try await mapErrors { try await daemon.system.sendSessionData(Data(call.arguments[0].bytes ?? []), on: session) }
                    return []
                },
                DBusMethod("SendToExtension", inputs: [DBusArgument("data", "ay")]) { call in
                    try await mapErrors {
                        try await daemon.system.sendRouteData(Data(call.arguments[0].bytes ?? []), fromApplication: call.sender, on: session)
                    }
                    return []
                },
            ], properties: [
                property("Id", "s"), property("DeviceId", "s"), property("Device", "o"), property("Protocol", "s"), property("PlaybackState", "s"), property("Position", "d"),
                property("Rate", "d"), property("Duration", "d"), property("Title", "s"), property("Url", "s"), property("Application", "s"), property("ProtocolReason", "s"),
            ], signals: [
                DBusSignalDescription("Received", arguments: [DBusArgument("channel", "s"), DBusArgument("data", "ay")]),
                DBusSignalDescription("Ended", arguments: [DBusArgument("error", "s"), DBusArgument("message", "s")]),
            ]),
        ])
    }
}
