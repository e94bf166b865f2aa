/// A change of the box's own network that should restart LAN discovery: what
/// rtnetlink and nl80211 report, and what the LAN transport acts on.
public enum NetworkChange: Sendable, Hashable {
    /// The link is up and has carrier.
    case linkUp(interface: String, index: Int32)
    /// The link went down, lost carrier, or was removed.
    case linkDown(interface: String, index: Int32)
    case addressAdded(interface: String, index: Int32, address: String)
    case addressRemoved(interface: String, index: Int32, address: String)
    /// nl80211: associated, disassociated, or roamed to another access point.
    case wifiConnected(index: Int32)
    case wifiDisconnected(index: Int32)
    case wifiRoamed(index: Int32)

    public var interfaceIndex: Int32 {
        switch self {
        case .linkUp(_, let index), .linkDown(_, let index), .addressAdded(_, let index, _), .addressRemoved(_, let index, _),
            .wifiConnected(let index), .wifiDisconnected(let index), .wifiRoamed(let index):
            index
        }
    }
}
