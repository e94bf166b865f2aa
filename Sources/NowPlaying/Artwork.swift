#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Artwork of content, loaded only when something shows it.
///
/// Give a `url` when the image is reachable by URL (MPRIS clients fetch it
/// themselves), a `loader` when the extension has to produce the bytes; the
/// loader is called lazily, at most once per artwork id and size, by whoever
/// displays it (the MPRIS bridge caches the result).
public struct Artwork: Sendable {
    /// A pixel size a display asks for.
    public struct Size: Sendable, Hashable {
        public var width: Int
        public var height: Int
        public init(width: Int, height: Int) {
            self.width = width
            self.height = height
        }
    }

    public var id: String
    public var url: URL?
    public var loader: (@Sendable (Size) async throws -> ArtworkRepresentation)?

    public init(id: String, url: URL) {
        self.id = id
        self.url = url
        self.loader = nil
    }

    public init(id: String, url: URL? = nil, loader: @escaping @Sendable (Size) async throws -> ArtworkRepresentation) {
        self.id = id
        self.url = url
        self.loader = loader
    }
}
