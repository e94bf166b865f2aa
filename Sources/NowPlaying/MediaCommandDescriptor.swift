

/// A command as remote UIs see it: kind, enabled flag, intervals and rates.
public struct MediaCommandDescriptor: Sendable, Hashable, Codable {
    public var kind: MediaCommand.Kind
    public var isEnabled: Bool
    public var preferredIntervals: [Double]
    public var supportedPlaybackRates: [Double]
}
