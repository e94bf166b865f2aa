public import LoopbackTransport
public import MediaClock

/// Builds the simulated devices an extension is tested against, one behaviour or
/// fault at a time, on MediaRoute's loopback transport:
///
///     let tv = LoopbackDeviceBuilder.tv("Living Room TV").pin("1234").appearing(after: 2).build()
///     let transport = LoopbackDeviceBuilder.transport(with: [tv], clock: clock)
///
/// Times are seconds of host time since the transport started (a `ManualHostClock`
/// advances them without waiting).
public struct LoopbackDeviceBuilder: Sendable {
    private var spec: LoopbackDeviceSpec

    private init(_ spec: LoopbackDeviceSpec) { self.spec = spec }

    /// A TV: plays URLs, absolute volume and mute. Its endpoint id is `name` made lower-case with dashes.
    public static func tv(_ displayName: String) -> LoopbackDeviceBuilder {
        LoopbackDeviceBuilder(LoopbackDeviceSpec(name: endpointName(displayName), displayName: displayName, kind: .tv))
    }

    /// A speaker: takes real-time audio, relative volume.
    public static func speaker(_ displayName: String) -> LoopbackDeviceBuilder {
        LoopbackDeviceBuilder(LoopbackDeviceSpec(name: endpointName(displayName), displayName: displayName, kind: .speaker))
    }

    /// Demands `pin` before anything else.
    public func pin(_ pin: String) -> Self { with { $0.pin = pin } }
    /// Appears `seconds` after the transport started (absent before).
    public func appearing(after seconds: Double) -> Self { with { $0.appearAfter = seconds } }
    /// Disappears `seconds` after the transport started.
    public func disappearing(after seconds: Double) -> Self { with { $0.disappearAfter = seconds } }
    /// Refuses every connection.
    public func refusingConnections() -> Self { with { $0.refusesConnections = true } }
    /// Drops every connection `seconds` after it opened.
    public func droppingConnections(after seconds: Double) -> Self { with { $0.dropConnectionAfter = seconds } }
    /// Answers everything `seconds` late.
    public func replying(after seconds: Double) -> Self { with { $0.replyDelay = seconds } }
    /// Starts at `volume` (0…1).
    public func volume(_ volume: Float) -> Self { with { $0.volume = max(0, min(1, volume)) } }
    /// Changes its own volume to `volume`, `seconds` after a connection opened (its buttons).
    public func changingVolume(to volume: Float, after seconds: Double) -> Self {
        with { $0.deviceVolumeChanges.append(.init(after: seconds, volume: volume)) }
    }
    /// Media it plays lasts `seconds`.
    public func mediaDuration(_ seconds: Double) -> Self { with { $0.mediaDuration = seconds } }
    /// Is reached through `adapter` (it disappears while that adapter is gone).
    public func reached(through adapter: String) -> Self { with { $0.adapter = adapter } }

    /// The device as the loopback transport takes it.
    public func build() -> LoopbackDeviceSpec { spec }

    /// A loopback transport with these devices, on `clock`.
    public static func transport(with devices: [LoopbackDeviceSpec], clock: any HostClock) -> LoopbackTransport {
        LoopbackTransport(scenario: LoopbackScenario(devices: devices), clock: clock)
    }

    private func with(_ change: (inout LoopbackDeviceSpec) -> Void) -> Self {
        var copy = self
        change(&copy.spec)
        return copy
    }

    private static func endpointName(_ displayName: String) -> String {
        String(displayName.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "-" })
    }
}
