import MediaDevice
import RoutingModel
import Transport

/// The devices extensions reported, merged into one entry per physical device and
/// kept incrementally (each report changes only the entries it touches).
///
/// Members join an entry by identifiers the protocols provide (UDN, announced MAC,
/// Bluetooth address, IP address: ``DeviceIdentifier``). A display name merges only
/// as a last resort: same name, same type, and no identifier of a kind both have
/// that differs. Two members of one protocol never share an entry (two renderers on
/// one host are two devices), and a simulated device never merges with a real one.
///
/// An entry's id is the key of the member that created it and stays while any
/// member remains, so a picker or a D-Bus object path follows the device even when
/// the member seen first goes away.
struct DeviceDirectory {
    /// One merged entry: its stable id and its members, in the order they joined.
    struct Entry {
        let id: String
        var keys: [DeviceKey]
    }

    /// What a report changed, in the order to announce it.
    enum Change: Equatable {
        case found(String)
        case updated(String)
        /// The entry is gone: its last member was lost, or it was merged into another entry.
        case lost(String)
    }

    private(set) var devices: [DeviceKey: MediaOutputDevice] = [:]
    private var entries: [String: Entry] = [:]
    /// Entry ids in the order the entries were first found.
    private(set) var order: [String] = []
    private var entryOfKey: [DeviceKey: String] = [:]
    /// Identifier → entry ids holding it, so a new member finds its entry without a scan.
    private var entriesByIdentifier: [DeviceIdentifier: Set<String>] = [:]

    var orderedEntries: [Entry] { order.compactMap { entries[$0] } }

    func entry(withID id: String) -> Entry? { entries[id] }

    func entry(containing key: DeviceKey) -> Entry? { entryOfKey[key].flatMap { entries[$0] } }

    /// Entry id → the merge name it is shown under (its first member's), and how many entries
    /// share each name: so a report learns whether its entry needs a suffix without a scan.
    private var entryNames: [String: String] = [:]
    private var nameCounts: [String: Int] = [:]

    /// How many entries are shown under `name` (a merge name).
    func entryCount(named name: String) -> Int { nameCounts[name] ?? 0 }

    /// The merge name an entry is shown under.
    func mergeName(ofEntry id: String) -> String? { entryNames[id] }

    private mutating func refreshNames(_ changes: [Change]) {
        for change in changes {
            let id: String
            switch change {
            case .found(let value), .updated(let value), .lost(let value): id = value
            }
            if let old = entryNames.removeValue(forKey: id) {
                nameCounts[old]! -= 1
                if nameCounts[old] == 0 { nameCounts[old] = nil }
            }
            guard let first = entries[id]?.keys.first, let name = devices[first]?.displayName else { continue }
            let merged = Self.mergeName(name)
            entryNames[id] = merged
            nameCounts[merged, default: 0] += 1
        }
    }

    /// Adds or updates a member.
    mutating func upsert(_ device: MediaOutputDevice, key: DeviceKey) -> [Change] {
        let changes = applyUpsert(device, key: key)
        refreshNames(changes)
        return changes
    }

    /// Removes a member; its entry stays (same id) while other members remain.
    mutating func remove(_ key: DeviceKey) -> [Change] {
        let changes = applyRemove(key)
        refreshNames(changes)
        return changes
    }

    private mutating func applyUpsert(_ device: MediaOutputDevice, key: DeviceKey) -> [Change] {
        if let id = entryOfKey[key] {
            unindex(key, entry: id)
            devices[key] = device
            index(key, entry: id)
            // Identifiers learned later (a MAC from a description) can join two entries.
            var changes = absorbMatches(of: id)
            let survivor = entryOfKey[key]!
            changes.append(.updated(survivor))
            return changes
        }
        devices[key] = device
        let identifiers = device.identifiers
        let byIdentifier = candidates(sharing: identifiers).filter { canJoin(key, entries[$0]!) }
        let target = byIdentifier.first ?? order.first { id in
            let entry = entries[id]!
            return canJoin(key, entry) && sharesNameAndType(key, entry)
        }
        guard let target else {
            var id = key.description
            var suffix = 2
            while entries[id] != nil {
                id = "\(key.description)#\(suffix)"
                suffix += 1
            }
            entries[id] = Entry(id: id, keys: [key])
            order.append(id)
            entryOfKey[key] = id
            index(key, entry: id)
            return [.found(id)]
        }
        entries[target]!.keys.append(key)
        entryOfKey[key] = target
        index(key, entry: target)
        var changes = absorbMatches(of: target)
        changes.append(.updated(entryOfKey[key]!))
        return changes
    }

    private mutating func applyRemove(_ key: DeviceKey) -> [Change] {
        guard let id = entryOfKey[key] else { return [] }
        unindex(key, entry: id)
        entryOfKey[key] = nil
        devices[key] = nil
        entries[id]!.keys.removeAll { $0 == key }
        if entries[id]!.keys.isEmpty {
            entries[id] = nil
            order.removeAll { $0 == id }
            return [.lost(id)]
        }
        return [.updated(id)]
    }

    // MARK: Rules

    /// Identifiers that name a device whatever network it is on (an IP address is only
    /// as good as the neighbourhood: a device that moved or has two links has two).
    static let strongKinds: Set<String> = ["udn", "mac", "bluetooth"]

    /// Whether two sets of identifiers name different devices: one simulated and the other
    /// not; a strong kind both have with no value in common; or IP addresses with none in
    /// common, even when they claim a strong identifier in common. A UDN or MAC is only what
    /// a host says of itself: any host on the LAN can announce another device's, so a claim
    /// from another address never joins that device's entry (where a person would pick it
    /// believing it is the TV they know). A device on two links at once is two entries.
    static func conflict(_ a: Set<DeviceIdentifier>, _ b: Set<DeviceIdentifier>) -> Bool {
        let simulatedA = a.contains { $0.kind == "simulated" }
        let simulatedB = b.contains { $0.kind == "simulated" }
        if simulatedA != simulatedB { return true }
        let kindsA = Dictionary(grouping: a, by: \.kind)
        let kindsB = Dictionary(grouping: b, by: \.kind)
        for (kind, values) in kindsA where kind != "ip" {
            guard let other = kindsB[kind] else { continue }
            if Set(values).isDisjoint(with: other) { return true }
        }
        if let ipsA = kindsA["ip"], let ipsB = kindsB["ip"], Set(ipsA).isDisjoint(with: ipsB) { return true }
        return false
    }

    /// The name the merge compares: white space collapsed, case folded.
    static func mergeName(_ name: String) -> String {
        SystemDevice.comparableName(name)
    }

    func identifiers(of entry: Entry) -> Set<DeviceIdentifier> {
        entry.keys.reduce(into: []) { $0.formUnion(devices[$1]?.identifiers ?? []) }
    }

    private func canJoin(_ key: DeviceKey, _ entry: Entry) -> Bool {
        guard !entry.keys.contains(where: { $0.protocolID == key.protocolID && $0 != key }) else { return false }
        return !Self.conflict(devices[key]?.identifiers ?? [], identifiers(of: entry))
    }

    private func sharesNameAndType(_ key: DeviceKey, _ entry: Entry) -> Bool {
        guard let device = devices[key] else { return false }
        let name = Self.mergeName(device.displayName)
        return entry.keys.contains { member in
            guard let other = devices[member] else { return false }
            let typesAgree = device.deviceType == other.deviceType || device.deviceType == .unknown || other.deviceType == .unknown
            return typesAgree && Self.mergeName(other.displayName) == name
        }
    }

    /// Entries holding any of `identifiers`, oldest first.
    private func candidates(sharing identifiers: Set<DeviceIdentifier>) -> [String] {
        var found: Set<String> = []
        for identifier in identifiers { found.formUnion(entriesByIdentifier[identifier] ?? []) }
        return order.filter(found.contains)
    }

    /// Merges into one entry every other entry that shares an identifier with `id`'s entry
    /// and can join it; the oldest entry's id survives. Returns the absorbed entries as lost.
    private mutating func absorbMatches(of id: String) -> [Change] {
        var survivor = id
        var changes: [Change] = []
        var progress = true
        while progress {
            progress = false
            guard let entry = entries[survivor] else { break }
            let mine = identifiers(of: entry)
            for other in candidates(sharing: mine) where other != survivor {
                guard let candidate = entries[other], mergeable(entry, candidate) else { continue }
                let (keep, drop) = order.firstIndex(of: other)! < order.firstIndex(of: survivor)! ? (other, survivor) : (survivor, other)
                let moved = entries[drop]!.keys
                for key in moved {
                    unindex(key, entry: drop)
                    entryOfKey[key] = keep
                    index(key, entry: keep)
                }
                entries[keep]!.keys += moved
                for (identifier, holders) in entriesByIdentifier where holders.contains(drop) {
                    entriesByIdentifier[identifier]!.remove(drop)
                    entriesByIdentifier[identifier]!.insert(keep)
                }
                entries[drop] = nil
                order.removeAll { $0 == drop }
                changes.append(.lost(drop))
                survivor = keep
                progress = true
                break
            }
        }
        return changes
    }

    private func mergeable(_ a: Entry, _ b: Entry) -> Bool {
        let protocolsA = Set(a.keys.map(\.protocolID))
        guard protocolsA.isDisjoint(with: b.keys.map(\.protocolID)) else { return false }
        return !Self.conflict(identifiers(of: a), identifiers(of: b))
    }

    private mutating func index(_ key: DeviceKey, entry: String) {
        for identifier in devices[key]?.identifiers ?? [] { entriesByIdentifier[identifier, default: []].insert(entry) }
    }

    private mutating func unindex(_ key: DeviceKey, entry: String) {
        guard let entryValue = entries[entry] else { return }
        let others = entryValue.keys.filter { $0 != key }
        let remaining = others.reduce(into: Set<DeviceIdentifier>()) { $0.formUnion(devices[$1]?.identifiers ?? []) }
        for identifier in devices[key]?.identifiers ?? [] where !remaining.contains(identifier) {
            entriesByIdentifier[identifier]?.remove(entry)
            if entriesByIdentifier[identifier]?.isEmpty == true { entriesByIdentifier[identifier] = nil }
        }
    }
}
