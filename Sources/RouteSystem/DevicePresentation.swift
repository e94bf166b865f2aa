import RoutingModel

/// The device list as the picker shows it, built from the directory: one entry per physical
/// device with its members in load order, and a suffix that tells apart two entries of the
/// same name (their protocols, else an address). Values in, values out.
struct DevicePresentation {
    /// A loaded protocol: its identity and place in load order.
    struct LoadedProtocol {
        var protocolType: MediaSharingProtocol
        var order: Int
    }

    let directory: DeviceDirectory
    /// The loaded protocols by id.
    let protocols: [String: LoadedProtocol]
    /// Each member's activation state (members not listed are idle).
    let states: [DeviceKey: ActivationState]

    /// Every entry, in the order the directory first saw them, suffixed where names are shared.
    var list: [SystemDevice] {
        let built = directory.orderedEntries.compactMap(device(for:))
        var counts: [String: Int] = [:]
        for device in built { counts[DeviceDirectory.mergeName(device.displayName), default: 0] += 1 }
        guard counts.values.contains(where: { $0 > 1 }) else { return built }
        return built.map { device in
            guard counts[DeviceDirectory.mergeName(device.displayName)]! > 1 else { return device }
            return device.renamed("\(device.displayName) (\(distinction(of: device)))")
        }
    }

    /// One entry as the list shows it, built alone (a report touches one entry, not the list).
    func presented(_ entry: DeviceDirectory.Entry) -> SystemDevice? {
        guard let base = device(for: entry) else { return nil }
        let shared = directory.entryCount(named: DeviceDirectory.mergeName(base.displayName)) > 1
        return shared ? base.renamed("\(base.displayName) (\(distinction(of: base)))") : base
    }

    /// The entry without a suffix: its members in load order, named after the member seen first.
    func device(for entry: DeviceDirectory.Entry) -> SystemDevice? {
        let members = entry.keys
            .sorted { order(of: $0.protocolID) < order(of: $1.protocolID) }
            .compactMap { key -> SystemDevice.Member? in
                guard let device = directory.devices[key], let loaded = protocols[key.protocolID] else { return nil }
                return SystemDevice.Member(protocolType: loaded.protocolType, device: OutputDeviceDescription(device), state: states[key] ?? .idle)
            }
        guard let first = entry.keys.first, let name = directory.devices[first]?.displayName, !members.isEmpty else { return nil }
        return SystemDevice(id: entry.id, displayName: name, members: members)
    }

    /// What tells apart two devices of the same name: their protocols, else an address.
    func distinction(of device: SystemDevice) -> String {
        let protocols = device.protocolDisplayNames.joined(separator: " + ")
        let sameProtocols = directory.orderedEntries.compactMap(self.device(for:)).filter {
            $0.id != device.id && DeviceDirectory.mergeName($0.displayName) == DeviceDirectory.mergeName(device.displayName)
                && $0.protocolDisplayNames == device.protocolDisplayNames
        }
        guard !sameProtocols.isEmpty else { return protocols }
        let address = device.members.lazy.flatMap { directory.devices[$0.key]?.identifiers ?? [] }.compactMap { identifier -> String? in
            switch identifier {
            case .ipAddress(let value), .bluetooth(let value), .mac(let value): value
            default: nil
            }
        }.sorted().first
        let memberID = device.members.first?.device.id ?? device.id
        return "\(protocols), \(address ?? (memberID.count <= 12 ? memberID : "…" + memberID.suffix(8)))"
    }

    private func order(of protocolID: String) -> Int {
        protocols[protocolID]?.order ?? Int.max
    }
}
