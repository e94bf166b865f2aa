/// One SOAP action of a MediaRenderer's services, typed: the service it belongs to,
/// its name and its arguments in the order the service description lists them.
/// Everything MediaRoute asks a renderer is one of these, so a misspelt action or
/// argument is a compile error, not a fault from the device.
public protocol RendererAction: Sendable {
    /// The service kind as in the description (`AVTransport`, `RenderingControl`, `ConnectionManager`).
    static var service: String { get }
    /// The action's name.
    var name: String { get }
    /// The arguments, in the order of the service's SCPD.
    var arguments: [(name: String, value: String)] { get }
}

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

/// RenderingControl:1 actions on the `Master` channel of instance 0.
public enum RenderingControlAction: RendererAction, Hashable {
    case getVolume
    /// Set the volume in the device's own units (its `Volume` state variable's range).
    case setVolume(Int)
    case getMute
    case setMute(Bool)

    public static let service = "RenderingControl"

    public var name: String {
        switch self {
        case .getVolume: "GetVolume"
        case .setVolume: "SetVolume"
        case .getMute: "GetMute"
        case .setMute: "SetMute"
        }
    }

    public var arguments: [(name: String, value: String)] {
        let prefix = [("InstanceID", "0"), ("Channel", "Master")]
        switch self {
        case .getVolume, .getMute: return prefix
        case .setVolume(let units): return prefix + [("DesiredVolume", String(units))]
        case .setMute(let muted): return prefix + [("DesiredMute", muted ? "1" : "0")]
        }
    }
}

/// ConnectionManager:1 actions.
public enum ConnectionManagerAction: RendererAction, Hashable {
    /// The formats the renderer plays (its `Sink` answer).
    case getProtocolInfo

    public static let service = "ConnectionManager"

    public var name: String { "GetProtocolInfo" }
    public var arguments: [(name: String, value: String)] { [] }
}
