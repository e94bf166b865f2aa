import CSbc
import Synchronization

/// Why audio cannot be encoded for a transport.
public struct BluetoothAudioError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
