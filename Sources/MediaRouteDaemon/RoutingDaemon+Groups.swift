import Coordination
import DBus
import Logging
import MediaDevice
import RoutingModel
import MediaRouteBusAPI

/// A group route: routes playing one URL on one timeline, owned by the client that made it.
struct GroupRoute {
    let owner: String
    let coordination: CoordinatedGroup
    /// The members' session paths, in the order they joined.
    var members: [DBusObjectPath]
}

extension RoutingDaemon {
    /// `Manager1.CreateGroup`: the routes of `paths`, each playing the same URL (started with
    /// `Session1.Start`), become one group route at `/org/mediaroute/group/<n>`, paused until
    /// `Group1.Play`. Ends with `Group1.End` or when its owner leaves the bus.
    func createGroup(_ paths: [DBusObjectPath], owner: String) async throws -> DBusObjectPath {
        guard Set(paths).count == paths.count else { throw MediaDeviceError(.invalidArgument, "a group takes each route once").dbusError }
        var members: [(DBusObjectPath, any InterfaceControllable)] = []
        var url: String?
        for path in paths {
            let (control, memberURL) = try await groupMember(path)
            if let url, url != memberURL {
                throw MediaDeviceError(.invalidArgument, "\(path) plays \(memberURL), not the group's \(url)").dbusError
            }
            url = memberURL
            members.append((path, control))
        }
        nextGroup += 1
        let number = nextGroup
        let coordination = CoordinatedGroup(itemID: url ?? "")
        // Held here, in order with what the group says next: a client that paused its members
        // itself raced its own pauses (sent from a background task) against Group1.Play, and a
        // pause that lost left a member paused while the group played.
        for (_, control) in members { control.pause() }
        for (path, control) in members { await coordination.add(path.rawValue, control: control) }
        groups[number] = GroupRoute(owner: owner, coordination: coordination, members: members.map(\.0))
        await connection.export(GroupObject(daemon: self, number: number).object, at: Group1.path(number))
        logger.info("group route created", metadata: ["group": "\(number)", "members": "\(paths.count)", "url": "\(url ?? "")"])
        return Group1.path(number)
    }

    /// The playback of the route at `path`, and the URL it plays.
    private func groupMember(_ path: DBusObjectPath) async throws -> (any InterfaceControllable, String) {
        let session = try activeSession(at: path)
        guard let control = await system.playbackControl(for: session), let url = playingURL(session) else {
            throw MediaDeviceError(.deviceNotActive, "\(path) plays no URL (Session1.Start first)").dbusError
        }
        return (control, url)
    }

    func handleGroupCall(_ call: Group1.Call, group number: Int, sender: String) async throws {
        guard let group = groups[number] else { throw MediaDeviceError(.deviceNotActive, "the group has ended").dbusError }
        switch call {
        case .play:
            // The first time from the start; after a pause, from where the group stands.
            if await group.coordination.expectedPosition() == nil { await group.coordination.seek(to: 0) }
            await group.coordination.play()
        case .pause: await group.coordination.pause()
        case .seek(let position): await group.coordination.seek(to: position)
        case .addMember(let path):
            let (control, url) = try await groupMember(path)
            guard url == group.coordination.itemID else {
                throw MediaDeviceError(.invalidArgument, "\(path) plays \(url), not the group's \(group.coordination.itemID)").dbusError
            }
            await group.coordination.add(path.rawValue, control: control)
            if !group.members.contains(path) { groups[number]?.members.append(path) }
            logger.info("group member joined", metadata: ["group": "\(number)", "session": "\(path)"])
        case .removeMember(let path):
            guard group.members.contains(path) else { throw MediaDeviceError(.invalidArgument, "\(path) is not in the group").dbusError }
            await removeMember(path, from: number)
        case .end: await endGroup(number)
        }
    }

    /// `Group1`'s properties now.
    func groupProperties(_ number: Int) async -> Group1.Properties? {
        guard let group = groups[number] else { return nil }
        var properties = Group1.Properties()
        properties.members = group.members
        properties.position = await group.coordination.expectedPosition() ?? -1
        for offset in await group.coordination.offsets {
            if let path = DBusObjectPath(offset.id) { properties.offsets[path] = offset.offset }
        }
        return properties
    }

    private func removeMember(_ path: DBusObjectPath, from number: Int) async {
        guard let group = groups[number] else { return }
        await group.coordination.remove(path.rawValue)
        groups[number]?.members.removeAll { $0 == path }
        logger.info("group member left", metadata: ["group": "\(number)", "session": "\(path)"])
        connection.emitPropertiesChanged(
            path: Group1.path(number), interface: Group1.interface,
            changed: ["Members": .array(elementSignature: "o", (groups[number]?.members ?? []).map { .objectPath($0) })])
    }

    /// A route ended: it leaves any group it was in; the others play on.
    func memberEnded(_ path: DBusObjectPath) async {
        for (number, group) in groups where group.members.contains(path) { await removeMember(path, from: number) }
    }

    func endGroup(_ number: Int) async {
        guard let group = groups.removeValue(forKey: number) else { return }
        await group.coordination.end()
        connection.unexport(Group1.path(number))
        logger.info("group route ended", metadata: ["group": "\(number)"])
    }
}
