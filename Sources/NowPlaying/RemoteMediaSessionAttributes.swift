#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The state of an external device's playback that an app and its
/// ``RemoteMediaSessionExtension`` share: a `Codable` value with an `id`.
///
/// Include only what the extension needs to represent the device. The same
/// JSON arrives in push events (`{"aps": {"attributes": …}}`), so the coding
/// keys are the wire format of ``PushEndpointHandler``.
public protocol RemoteMediaSessionAttributes: Codable, Sendable {
    /// Identifies the session; every update must carry the id it started with.
    var id: String { get }
}
