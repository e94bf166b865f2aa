#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif

/// How long content lasts.
public enum MediaDuration: Sendable, Equatable, Hashable {
    /// A known length in seconds.
    case finite(Double)
    /// A live stream without an end.
    case live

    /// The length in seconds, nil when live.
    public var seconds: Double? {
        if case .finite(let seconds) = self { return seconds }
        return nil
    }
}
