#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif

/// A receiver's volume, as its status reports it.
public struct CastVolume: Sendable, Equatable, Decodable {
    public var level: Double?
    public var muted: Bool?

    public init(level: Double? = nil, muted: Bool? = nil) {
        self.level = level
        self.muted = muted
    }
}
