#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the sender asks a simulated device.
public enum LoopbackRequest: Codable, Sendable, Equatable {
    case hello
    case pair(pin: String)
    case load(url: String, application: String?)
    case play
    case pause
    case seek(position: Double)
    case setRate(Double)
    case stop
    case setVolume(Float)
    case changeVolume(steps: Int)
    case setMute(Bool)
    case appData(application: String, payload: [UInt8])
    case audio(frames: Int, payload: WireBytes)
    case status
}
