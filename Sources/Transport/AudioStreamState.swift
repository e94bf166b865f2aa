#if canImport(Glibc)
import Glibc
#endif

/// Where a device's audio stream is (BlueZ's `MediaTransport1.State`).
public enum AudioStreamState: Sendable, Hashable {
    /// Configured, not streaming: nobody holds it, or the device suspended it.
    case idle
    /// Being started (acquired, the device not yet streaming).
    case pending
    /// Streaming: packets written to the acquired socket are played.
    case active
    /// The stream no longer exists.
    case gone
}
