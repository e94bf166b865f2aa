import CNetlink
#if canImport(Glibc)
import Glibc
#endif

/// The nl80211 generic netlink family as this kernel has it: its id and the
/// multicast groups MediaRoute listens to, or why it is not there.
public struct NL80211Family: Sendable, Hashable {
    public var id: UInt16
    /// Group name → id, for `scan`, `mlme` and `config` where present.
    public var groups: [String: UInt32]

    /// Resolves the family through libnl's controller.
    /// - Returns: the family, or the reason it is unavailable (e.g. "Object not found" without cfg80211).
    public static func resolve() -> Result<NL80211Family, TransportUnavailable> {
        guard let socket = nl_socket_alloc() else { return .failure(TransportUnavailable("cannot allocate a netlink socket")) }
        defer { nl_socket_free(socket) }
        let connected = genl_connect(socket)
        guard connected == 0 else { return .failure(TransportUnavailable("generic netlink: \(String(cString: nl_geterror(connected)))")) }
        let family = genl_ctrl_resolve(socket, "nl80211")
        guard family >= 0 else {
            return .failure(TransportUnavailable("the kernel has no nl80211 family (\(String(cString: nl_geterror(family)))): no cfg80211 or no Wi-Fi driver"))
        }
        var groups: [String: UInt32] = [:]
        for name in ["scan", "mlme", "config"] {
            let group = genl_ctrl_resolve_grp(socket, "nl80211", name)
            if group >= 0 { groups[name] = UInt32(group) }
        }
        return .success(NL80211Family(id: UInt16(family), groups: groups))
    }
}
