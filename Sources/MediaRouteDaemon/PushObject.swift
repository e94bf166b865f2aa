#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import DBus
import MediaRouteBusAPI
import NowPlaying

/// `/org/mediaroute/push`: `org.mediaroute.Push1`, the tokens a server needs to
/// start and update Now Playing sessions through the push endpoint, and the
/// commands people send to pushed sessions.
struct PushObject {
    static let path: DBusObjectPath = "/org/mediaroute/push"
    static let interface = "org.mediaroute.Push1"

    let center: NowPlayingCenter
    /// `http://HOST:PORT/nowplaying`, or empty when the endpoint is off.
    let endpoint: String

    static func notFound(_ id: String) -> DBusError {
        DBusError(name: "org.mediaroute.Error.SessionNotFound", message: "no Now Playing session \(id)")
    }

    var object: DBusObject {
        let center = self.center
        let endpoint = self.endpoint
        let topic = PushedSessionExtension.topic
        return DBusObject(interfaces: [
            DBusInterface(Self.interface, methods: [
                DBusMethod("GetPushToStartToken", outputs: [DBusArgument("token", "s")]) { _ in
                    [.string(await center.pushToStartToken(topic: topic)?.hex ?? "")]
                },
                DBusMethod("RotatePushToStartToken", outputs: [DBusArgument("token", "s")]) { _ in
                    [.string(await center.rotatePushToStartToken(topic: topic).hex)]
                },
                DBusMethod("GetSessionPushToken", inputs: [DBusArgument("session", "s")], outputs: [DBusArgument("token", "s")]) { call in
                    let id = call.arguments.first?.string ?? ""
                    guard let token = await center.pushToken(forSession: id) else { throw Self.notFound(id) }
                    return [.string(token.hex)]
                },
                DBusMethod("RotateSessionPushToken", inputs: [DBusArgument("session", "s")], outputs: [DBusArgument("token", "s")]) { call in
                    let id = call.arguments.first?.string ?? ""
                    do {
                        return [.string(try await center.rotatePushToken(forSession: id).hex)]
                    } catch {
                        throw Self.notFound(id)
                    }
                },
            ], properties: [
                DBusProperty("Endpoint", signature: "s") { .string(endpoint) },
                DBusProperty("Topic", signature: "s") { .string(topic) },
            ], signals: [
                DBusSignalDescription("CommandRequested", arguments: [
                    DBusArgument("session", "s"), DBusArgument("command", "s"), DBusArgument("arguments", "a{sv}"),
                ]),
            ]),
        ])
    }

    /// The `CommandRequested` signal body for a forwarded command.
    static func signalBody(_ command: ForwardedCommand) -> [DBusValue] {
        var arguments: [String: DBusValue] = [:]
        if let value = command.value { arguments["value"] = .double(value) }
        if let device = command.deviceID { arguments["device"] = .string(device) }
        return [.string(command.sessionID), .string(command.command), .properties(arguments)]
    }
}
