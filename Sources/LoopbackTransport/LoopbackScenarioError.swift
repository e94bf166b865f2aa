#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif

/// A scenario file that cannot be used.
public struct LoopbackScenarioError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
