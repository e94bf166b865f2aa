/// Where to play: the box itself, a route, or nothing because the person cancelled.
public enum RouteSuggestion: Sendable, Hashable {
    case local
    /// A device id and its display name, as the picker lists them.
    case external(deviceID: String, displayName: String)
}
