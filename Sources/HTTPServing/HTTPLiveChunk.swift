/// One read of a live body.
public enum HTTPLiveChunk: Sendable, Equatable {
    case bytes([UInt8])
    /// Nothing now: wait for the wake-up.
    case none
    case ended
}
