#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Image bytes for artwork, as loaded.
public struct ArtworkRepresentation: Sendable, Equatable {
    /// The encoded image (PNG, JPEG, …).
    public var data: Data
    /// Its MIME type when known.
    public var mimeType: String?

    /// - Throws: ``RemoteMediaSessionError/Code/invalidAttributes`` for empty data.
    public init(data: Data, mimeType: String? = nil) throws {
        guard !data.isEmpty else { throw RemoteMediaSessionError(.invalidAttributes, "empty artwork") }
        self.data = data
        self.mimeType = mimeType
    }
}
