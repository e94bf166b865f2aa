import MediaDevice
import RoutingModel
import Synchronization

/// What a ``RecordingRoutingManager`` wait did not see.
public struct RecordingError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
