public import MediaDevice
public import RoutingModel

/// What the loaded protocols pinned about devices (`mediaroutectl trust`): listed, forgotten,
/// and a changed identity accepted, by a device's name or id.
extension RouteSystem {
    /// The extensions that pin identities, in load order.
    private var identityPinners: [any IdentityPinning] {
        extensions.values.sorted { $0.order < $1.order }.compactMap { $0.instance as? any IdentityPinning }
    }

    /// Everything the loaded protocols pinned, by kind then name.
    public func pinnedIdentities() async -> [PinnedIdentity] {
        var entries: [PinnedIdentity] = []
        for pinner in identityPinners { entries += await pinner.pinnedIdentities() }
        return entries.sorted { ($0.kind.rawValue, $0.name, $0.deviceID) < ($1.kind.rawValue, $1.name, $1.deviceID) }
    }

    /// The device ids `name` names among the pinned entries: an entry's id or name, or a
    /// member of the device present under that name.
    func pinnedDeviceIDs(named name: String, in entries: [PinnedIdentity]) -> Set<String> {
        var ids = Set(entries.filter { $0.isNamed(name) }.map(\.deviceID))
        if let device = device(named: name) { ids.formUnion(device.members.map(\.device.id)) }
        return ids.intersection(entries.map(\.deviceID))
    }

    /// Forgets what is pinned for the device `name` names: its next use is a first use.
    /// - Returns: how many entries were forgotten.
    /// - Throws: deviceNotFound when nothing is pinned under that name.
    public func forgetIdentity(named name: String) async throws -> Int {
        let ids = pinnedDeviceIDs(named: name, in: await pinnedIdentities())
        guard !ids.isEmpty else { throw MediaDeviceError(.deviceNotFound, "nothing is pinned for \(name)") }
        var count = 0
        for pinner in identityPinners {
            for id in ids { count += await pinner.forgetIdentity(of: id) }
        }
        logger.notice("pinned identity forgotten", metadata: ["device": "\(name)", "entries": "\(count)"])
        return count
    }

    /// Pins the identity the device `name` names offered in place of its pinned one (a Cast
    /// receiver's new certificate, an AirPlay receiver's new host).
    /// - Returns: how many were accepted.
    /// - Throws: deviceNotFound when nothing is pinned under that name; invalidArgument when
    ///   it offered nothing new.
    public func acceptIdentity(named name: String) async throws -> Int {
        let entries = await pinnedIdentities()
        let ids = pinnedDeviceIDs(named: name, in: entries)
        guard !ids.isEmpty else { throw MediaDeviceError(.deviceNotFound, "nothing is pinned for \(name)") }
        guard entries.contains(where: { ids.contains($0.deviceID) && $0.offered != nil }) else {
            throw MediaDeviceError(.invalidArgument, "\(name) presented no other identity than its pinned one: nothing to accept")
        }
        var count = 0
        for pinner in identityPinners {
            for id in ids where await pinner.acceptIdentity(of: id) { count += 1 }
        }
        return count
    }
}
