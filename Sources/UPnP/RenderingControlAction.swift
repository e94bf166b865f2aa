

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
