#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The part of the attributes every event has.
package struct PushSessionID: Decodable {
    package var id: String
}
