import RoutingModel

/// How a volume request reaches a device, by the volume control it declares: levels to an
/// absolute device, steps to a relative one, a typed refusal to a fixed one. Values only; the
/// routing system makes the calls.
enum VolumeRouting {
    /// What to ask of the extension for a change of `steps`.
    enum Change: Equatable, Sendable {
        /// `changeVolume(by:)`.
        case steps(Int)
        /// Read the level, then `setVolume` it moved by this much (clamped to 0…1).
        case levelBy(Float)
    }

    /// The level to set on `device` for a request of `level`, clamped to 0…1.
    /// - Throws: ``MediaDeviceError`` `invalidArgument` for a level that is not a number,
    ///   `volumeControlUnsupported` for a relative-only or fixed-volume device.
    static func level(_ level: Float, on device: OutputDeviceDescription) throws(MediaDeviceError) -> Float {
        guard level.isFinite else { throw MediaDeviceError(.invalidArgument, "volume \(level) is not a number") }
        switch device.volumeControl {
        case .absolute:
            return clamped(level)
        case .relative:
            throw MediaDeviceError(
                .volumeControlUnsupported, "\(device.displayName) supports only relative volume changes; use changeVolume(by:)")
        case .none:
            throw MediaDeviceError(.volumeControlUnsupported, "\(device.displayName) has no volume control")
        }
    }

    /// How to move `device`'s volume by `steps`; an absolute device moves `absoluteStep` per step.
    /// - Throws: ``MediaDeviceError`` `volumeControlUnsupported` for a fixed-volume device.
    static func change(by steps: Int, on device: OutputDeviceDescription, absoluteStep: Float) throws(MediaDeviceError) -> Change {
        switch device.volumeControl {
        case .relative: return .steps(steps)
        case .absolute: return .levelBy(Float(steps) * absoluteStep)
        case .none: throw MediaDeviceError(.volumeControlUnsupported, "\(device.displayName) has no volume control")
        }
    }

    /// Whether `device` may be muted.
    /// - Throws: ``MediaDeviceError`` `unsupported` when it cannot be.
    static func checkMute(on device: OutputDeviceDescription) throws(MediaDeviceError) {
        guard device.canMute else { throw MediaDeviceError(.unsupported, "\(device.displayName) cannot be muted") }
    }

    static func clamped(_ level: Float) -> Float { min(max(level, 0), 1) }
}
