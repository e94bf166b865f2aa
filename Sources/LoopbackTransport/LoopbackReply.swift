#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a simulated device answers, or says by itself.
public enum LoopbackReply: Codable, Sendable, Equatable {
    case welcome(kind: LoopbackDeviceSpec.Kind, requiresPairing: Bool, volume: Float, muted: Bool)
    case ok
    /// `code` is one of `unauthorized`, `wrongPIN`, `unsupported`, `malformed`, `noMedia`.
    case failure(code: String, message: String)
    case playback(LoopbackPlaybackStatus)
    case volume(level: Float, muted: Bool)
    case appData(application: String, payload: [UInt8])
    case audioReceived(totalFrames: Int)
}
