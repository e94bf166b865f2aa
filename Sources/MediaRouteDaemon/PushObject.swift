import DBus
import MediaRouteBusAPI
import NowPlaying

/// `/org/mediaroute/push`: `org.mediaroute.Push1`, the tokens a server needs to
/// start and update Now Playing sessions through the push endpoint, and the
/// commands people send to pushed sessions.
struct PushObject {
    let center: NowPlayingCenter
    /// `http://HOST:PORT/nowplaying`, or nil when the endpoint is off.
    let endpoint: String?

    var object: DBusObject {
        let center = self.center
        let properties = Push1.Properties(endpoint: endpoint, topic: PushedSessionExtension.topic)
        let topic = properties.topic
        return DBusObject(interfaces: [
            DBusInterface(
                Push1.interface,
                methods: Push1.Call.exportedMethods { call, _ in
                    switch call {
                    case .getPushToStartToken:
                        return [.string(await center.pushToStartToken(topic: topic)?.hex ?? "")]
                    case .rotatePushToStartToken:
                        return [.string(await center.rotatePushToStartToken(topic: topic).hex)]
                    case .getSessionPushToken(let id):
                        guard let token = await center.pushToken(forSession: id) else { throw Push1.sessionNotFound(id) }
                        return [.string(token.hex)]
                    case .rotateSessionPushToken(let id):
                        do {
                            return [.string(try await center.rotatePushToken(forSession: id).hex)]
                        } catch {
                            throw Push1.sessionNotFound(id)
                        }
                    }
                },
                properties: Push1.Properties.signatures,
                signals: [Push1.CommandRequested.description],
                snapshot: { properties.values }),
        ])
    }

    /// The `CommandRequested` signal for a forwarded command.
    static func signal(_ command: ForwardedCommand) -> Push1.CommandRequested {
        Push1.CommandRequested(session: command.sessionID, command: command.command, value: command.value, device: command.deviceID)
    }
}
