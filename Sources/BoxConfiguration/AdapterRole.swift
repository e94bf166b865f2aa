

/// Which adapter of a transport to prefer when there are several.
public enum AdapterRole: String, Sendable, Hashable, CaseIterable, Codable {
    case primary
    case secondary
    /// Known but used only when no primary or secondary adapter is up.
    case standby
}
