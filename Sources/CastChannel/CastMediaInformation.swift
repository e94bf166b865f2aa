#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif

/// What a media status says of the item.
public struct CastMediaInformation: Sendable, Equatable, Decodable {
    public struct Metadata: Sendable, Equatable, Decodable {
        public struct Image: Sendable, Equatable, Decodable {
            public var url: String
        }

        public var metadataType: Int?
        public var title: String?
        public var subtitle: String?
        public var artist: String?
        public var albumName: String?
        public var images: [Image]?
    }

    public var contentId: String?
    public var contentType: String?
    public var streamType: String?
    public var duration: Double?
    public var metadata: Metadata?
}
