/// What is about to play, as route suggestions weigh it.
public struct PlaybackContent: Sendable, Hashable, Codable {
    /// Whether it has pictures (a TV is the natural route) or is audio only.
    public var isVideo: Bool
    /// Films, episodes, albums: what a person settles in for (the AirPlay 2 talk's long-form content).
    public var isLongForm: Bool

    public init(isVideo: Bool, isLongForm: Bool) {
        self.isVideo = isVideo
        self.isLongForm = isLongForm
    }
}
