#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif

/// The kind of media.
public enum MediaContentType: String, Sendable, Hashable, Codable {
    case audio
    case video
}
