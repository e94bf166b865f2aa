extension SystemDevice {
    /// A name as the picker compares names: runs of white space are one space, case is ignored.
    public static func comparableName(_ name: String) -> String {
        name.split(whereSeparator: \.isWhitespace).joined(separator: " ").lowercased()
    }
}

/// The one rule matching a person's words to a device, for every list that names devices
/// (the routing system's, the picker's, the D-Bus client's): the item with this id, else the
/// first whose display name matches case and spacing aside. A name two devices share matches
/// only with the distinguishing suffix the list gives each.
public enum DeviceNameMatching {
    public static func first<Items: Sequence>(
        in items: Items, named words: String, id: (Items.Element) -> String, displayName: (Items.Element) -> String
    ) -> Items.Element? {
        if let byID = items.first(where: { id($0) == words }) { return byID }
        let wanted = SystemDevice.comparableName(words)
        return items.first { SystemDevice.comparableName(displayName($0)) == wanted }
    }
}

extension Sequence<SystemDevice> {
    /// The device `nameOrID` names (``DeviceNameMatching``).
    public func named(_ nameOrID: String) -> SystemDevice? {
        DeviceNameMatching.first(in: self, named: nameOrID, id: \.id, displayName: \.displayName)
    }
}
