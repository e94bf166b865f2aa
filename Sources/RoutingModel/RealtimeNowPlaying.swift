/// What an app's real-time audio is: its metadata, cover art and where in it the app is.
public struct RealtimeNowPlaying: Sendable, Equatable {
    /// Cover art as image bytes.
    public struct Artwork: Sendable, Equatable {
        /// The most artwork a route carries: a receiver's screen needs no more.
        public static let maximumBytes = 1 << 20

        /// `image/jpeg` or `image/png`.
        public var mimeType: String
        public var bytes: [UInt8]

        /// Artwork whose bytes are JPEG or PNG (told by their signature, whatever the name says);
        /// nil for anything else or past ``maximumBytes``.
        public init?(bytes: [UInt8]) {
            guard bytes.count <= Self.maximumBytes else { return nil }
            if bytes.starts(with: [0xFF, 0xD8, 0xFF]) {
                mimeType = "image/jpeg"
            } else if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
                mimeType = "image/png"
            } else {
                return nil
            }
            self.bytes = bytes
        }
    }

    /// Title, artist, album and duration (seconds).
    public var metadata: PlaybackMetadata
    public var artwork: Artwork?
    /// Seconds into the track of the samples the app writes now; nil when unknown.
    public var position: Double?

    public init(metadata: PlaybackMetadata = PlaybackMetadata(), artwork: Artwork? = nil, position: Double? = nil) {
        self.metadata = metadata
        self.artwork = artwork
        self.position = position
    }
}
