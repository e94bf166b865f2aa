#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif

/// What a remote session is playing.
public protocol MediaContentRepresentable: Sendable {
    var id: String { get }
    var title: String? { get }
    var artist: String? { get }
    var album: String? { get }
    var duration: MediaDuration? { get }
    var artwork: Artwork? { get }
    var isExplicit: Bool { get }
}
