

/// What one `LastChange` event said (only what was in it is set).
public struct LastChange: Sendable, Hashable {
    public var transportState: TransportState?
    /// `TransportStatus` (`OK`, `ERROR_OCCURRED`).
    public var transportStatus: String?
    public var currentTrackURI: String?
    public var currentTrackDuration: Double?
    public var relativeTimePosition: Double?
    /// Master volume in the device's units.
    public var volume: Int?
    public var mute: Bool?

    public init() {}

    /// Parses a GENA `NOTIFY` body (`e:propertyset`) and the `LastChange` XML inside it.
    /// - Returns: nil when the property set has no `LastChange` (other evented variables only).
    public static func parseNotify(_ body: [UInt8], parser: XMLParser = XMLParser(maximumBytes: 64 * 1024)) throws(XMLError) -> LastChange? {
        let set = try parser.parse(body)
        guard set.name == "propertyset", set.namespace == UPnPNamespace.event else {
            throw XMLError(.unexpectedContent, "not a GENA property set (\(set.name) in \(set.namespace ?? "no namespace"))")
        }
        guard let text = set.children(named: "property").lazy.compactMap({ $0.child("LastChange") }).first?.text else { return nil }
        return try parse(text, parser: parser)
    }

    /// Parses the `Event` document of a `LastChange` value (instance 0 only).
    public static func parse(_ text: String, parser: XMLParser = XMLParser(maximumBytes: 64 * 1024)) throws(XMLError) -> LastChange {
        let event = try parser.parse(text)
        guard event.name == "Event", event.namespace == UPnPNamespace.avTransportEvent || event.namespace == UPnPNamespace.renderingControlEvent else {
            throw XMLError(.unexpectedContent, "LastChange root is \(event.name) in \(event.namespace ?? "no namespace")")
        }
        var change = LastChange()
        guard let instance = event.children(named: "InstanceID").first(where: { $0.attributes["val"] == "0" }) else { return change }
        for variable in instance.children {
            guard let value = variable.attributes["val"] else { continue }
            switch variable.name {
            case "TransportState":
                guard let state = TransportState(rawValue: value) else {
                    throw XMLError(.unexpectedContent, "unknown TransportState \(value.prefix(40))")
                }
                change.transportState = state
            case "TransportStatus": change.transportStatus = value
            case "CurrentTrackURI", "AVTransportURI": if variable.name == "CurrentTrackURI" || change.currentTrackURI == nil { change.currentTrackURI = value }
            case "CurrentTrackDuration", "CurrentMediaDuration": change.currentTrackDuration = UPnPTime.parse(value) ?? change.currentTrackDuration
            case "RelativeTimePosition": change.relativeTimePosition = UPnPTime.parse(value)
            case "Volume":
                guard variable.attributes["channel"].map({ $0 == "Master" }) ?? true else { continue }
                guard let level = Int(value) else { throw XMLError(.unexpectedContent, "Volume \(value.prefix(40)) is not a number") }
                change.volume = level
            case "Mute":
                guard variable.attributes["channel"].map({ $0 == "Master" }) ?? true else { continue }
                switch value.lowercased() {
                case "1", "true", "yes": change.mute = true
                case "0", "false", "no": change.mute = false
                default: throw XMLError(.unexpectedContent, "Mute \(value.prefix(40)) is not a boolean")
                }
            default: continue
            }
        }
        return change
    }
}
