#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The envelope `{"aps": {"event", "timestamp", "attributes"}}`.
package struct PushEnvelope<Attributes: Decodable>: Decodable {
    package struct APS: Decodable {
        package var event: PushEventKind
        package var timestamp: Double
        package var attributes: Attributes
    }

    var aps: APS
}
