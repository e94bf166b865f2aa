#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The message format spoken between the loopback extension and a simulated device.
///
/// Each message is one JSON object: an optional request id (echoed in the
/// reply; absent on device-initiated events) and a body.
public struct LoopbackEnvelope<Body: Codable & Sendable>: Codable, Sendable {
    public var id: UInt32?
    public var body: Body

    public init(id: UInt32?, body: Body) {
        self.id = id
        self.body = body
    }

    /// The envelope as message bytes.
    public func encoded() -> [UInt8] {
        // Encoding plain enums and structs of strings and numbers cannot fail.
        (try? Array(JSONEncoder().encode(self))) ?? []
    }

    /// An envelope decoded from message bytes, or nil for a malformed message.
    public static func decode(_ bytes: [UInt8]) -> LoopbackEnvelope? {
        try? JSONDecoder().decode(LoopbackEnvelope.self, from: Data(bytes))
    }
}

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

/// Bytes on the loopback wire as one base64 string: a real-time stream sends about 200 KB a
/// second, which as a JSON array of numbers cost the simulated speaker's daemon more CPU than
/// everything else on the route together.
public struct WireBytes: Codable, Sendable, Equatable {
    public var bytes: [UInt8]

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let data = Data(base64Encoded: text) else {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "not base64"))
        }
        bytes = Array(data)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(Data(bytes).base64EncodedString())
    }
}

/// Playback state as a simulated device reports it.
public struct LoopbackPlaybackStatus: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable { case stopped, paused, playing }
    public var url: String?
    public var state: State
    /// Position in seconds at the moment the status was sent.
    public var position: Double
    public var rate: Double
    public var duration: Double

    public init(url: String?, state: State, position: Double, rate: Double, duration: Double) {
        self.url = url
        self.state = state
        self.position = position
        self.rate = rate
        self.duration = duration
    }
}

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
