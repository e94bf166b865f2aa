

/// AVTransport:1 actions (instance 0, the only one renderers without a
/// ConnectionManager `PrepareForConnection` have).
public enum AVTransportAction: RendererAction, Hashable {
    case setAVTransportURI(uri: String, metadata: String)
    case setNextAVTransportURI(uri: String, metadata: String)
    /// Play at `speed` (1 is normal; renderers take "1", "2", "1/2" and the like).
    case play(speed: String = "1")
    case pause
    case stop
    /// Seek to a position from the start of the track (`REL_TIME`).
    case seek(relativeTime: Double)
    case getTransportInfo
    case getPositionInfo

    public static let service = "AVTransport"

    public var name: String {
        switch self {
        case .setAVTransportURI: "SetAVTransportURI"
        case .setNextAVTransportURI: "SetNextAVTransportURI"
        case .play: "Play"
        case .pause: "Pause"
        case .stop: "Stop"
        case .seek: "Seek"
        case .getTransportInfo: "GetTransportInfo"
        case .getPositionInfo: "GetPositionInfo"
        }
    }

    public var arguments: [(name: String, value: String)] {
        let instance = ("InstanceID", "0")
        switch self {
        case .setAVTransportURI(let uri, let metadata): return [instance, ("CurrentURI", uri), ("CurrentURIMetaData", metadata)]
        case .setNextAVTransportURI(let uri, let metadata): return [instance, ("NextURI", uri), ("NextURIMetaData", metadata)]
        case .play(let speed): return [instance, ("Speed", speed)]
        case .seek(let position): return [instance, ("Unit", "REL_TIME"), ("Target", UPnPTime.format(position))]
        case .pause, .stop, .getTransportInfo, .getPositionInfo: return [instance]
        }
    }

    /// The `Speed` argument for a playback rate: whole rates as integers ("2"), others as decimals.
    public static func speed(_ rate: Double) -> String {
        rate == rate.rounded() && abs(rate) < 1e9 ? String(Int(rate)) : String(rate)
    }
}
