#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The binary property lists of an AirPlay 2 session's `SETUP`s and `SETPEERS`, as
/// shairport-sync 5 reads them and OwnTone and iOS send them. A session is set up twice on
/// its encrypted RTSP connection: first the session (timing, the sender's identity; the
/// receiver answers with its event port), then each stream (format, ports, the stream key;
/// the receiver answers with its data and control ports).
///
/// Encoding and decoding go through FoundationEssentials' `PropertyListEncoder`/`Decoder`
/// (binary format); a receiver's answer is decoded from at most ``maximumBody`` bytes and a
/// malformed one is a typed ``RTSPError``, never a trap.
public enum AirPlay2Setup {
    /// The most bytes of a receiver's property list we decode.
    public static let maximumBody = 64 * 1024
    /// How every binary property list begins.
    static let binaryMagic = Array("bplist00".utf8)
    /// The `Content-Type` of every body here.
    public static let contentType = "application/x-apple-binary-plist"

    /// A clock of the session's timing: the sender's PTP master (its clock identity), at the
    /// sender's addresses.
    public struct TimingPeer: Codable, Sendable, Hashable {
        public var id: String
        public var addresses: [String]
        public var deviceType: UInt64 = 0
        /// The PTP clock identity, as a signed 64-bit number (what the receivers' plists hold).
        public var clockID: Int64
        public var supportsClockPortMatchingOverride = false

        public init(id: String, addresses: [String], clockIdentity: UInt64) {
            self.id = id
            self.addresses = addresses
            clockID = Int64(bitPattern: clockIdentity)
        }

        enum CodingKeys: String, CodingKey {
            case id = "ID", addresses = "Addresses", deviceType = "DeviceType", clockID = "ClockID"
            case supportsClockPortMatchingOverride = "SupportsClockPortMatchingOverride"
        }
    }

    /// The first `SETUP`: who we are and how the session is timed.
    public struct Session: Codable, Sendable, Hashable {
        public var name: String
        public var deviceID: String
        public var sessionUUID: String
        /// "PTP" or "NTP".
        public var timingProtocol: String
        public var macAddress: String?
        public var groupUUID: String?
        public var groupContainsGroupLeader: Bool?
        public var timingPeerInfo: TimingPeer?
        public var timingPeerList: [TimingPeer]?
        /// NTP only: our timing port.
        public var timingPort: UInt16?

        /// A session timed by our PTP master `peer`, in the group `groupUUID`.
        public static func ptp(name: String, deviceID: String, sessionUUID: String, groupUUID: String, peer: TimingPeer) -> Session {
            Session(
                name: name, deviceID: deviceID, sessionUUID: sessionUUID, timingProtocol: "PTP", macAddress: deviceID, groupUUID: groupUUID,
                groupContainsGroupLeader: false, timingPeerInfo: peer, timingPeerList: [peer], timingPort: nil)
        }
    }

    /// The receiver's answer to the first `SETUP`.
    public struct SessionReply: Codable, Sendable, Hashable {
        /// The TCP port of its event channel (0 or absent: none).
        public var eventPort: UInt16?
        public var timingPort: UInt16?
    }

    /// One stream of the second `SETUP`: real-time ALAC (type 96) by default.
    public struct Stream: Codable, Sendable, Hashable {
        /// Bit 18 (0x40000): ALAC, 44.1 kHz, 16 bits, stereo.
        public var audioFormat: UInt64 = 0x40000
        public var audioMode = "default"
        /// Our control port: the receiver's resend requests come from there, our sync packets go to its own.
        public var controlPort: UInt16
        /// Compression: 1 LPCM, 2 ALAC, 3 AAC, 4 AAC-ELD.
        public var ct: UInt64 = 2
        public var isMedia = true
        public var latencyMax: UInt64 = 88_200
        public var latencyMin: UInt64 = 11_025
        /// The stream key (32 bytes): every audio packet is sealed with it.
        public var shk: Data
        /// Frames per packet.
        public var spf: UInt64 = 352
        public var sr: UInt64 = 44_100
        /// 96: real time; 103: buffered.
        public var type: UInt64 = 96
        public var supportsDynamicStreamID = false
        public var streamConnectionID: UInt64

        public init(controlPort: UInt16, key: [UInt8], connectionID: UInt64, latencyFrames: UInt32) {
            self.controlPort = controlPort
            shk = Data(key)
            streamConnectionID = connectionID
            latencyMax = UInt64(max(latencyFrames, 11_025))
        }
    }

    /// The second `SETUP`'s body.
    public struct Streams: Codable, Sendable, Hashable {
        public var streams: [Stream]
        public init(_ streams: [Stream]) { self.streams = streams }
    }

    /// What the receiver answers for a stream: where the audio and sync packets go.
    public struct StreamReply: Codable, Sendable, Hashable {
        public var type: UInt64?
        public var dataPort: UInt16?
        public var controlPort: UInt16?
    }

    /// The receiver's answer to the second `SETUP`.
    public struct StreamsReply: Codable, Sendable, Hashable {
        public var streams: [StreamReply]
    }

    /// `value` as a binary property list.
    public static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        // Every value here is a struct of strings, numbers, data and arrays: encoding cannot fail.
        return (try? encoder.encode(value)).map { [UInt8]($0) } ?? []
    }

    /// The receiver's `body` as `type`; a body too large or not the plist expected is an error.
    public static func decode<T: Decodable>(_ type: T.Type, from body: [UInt8]) throws(RTSPError) -> T {
        guard body.count <= maximumBody else { throw RTSPError("a property list of \(body.count) bytes, more than \(maximumBody)") }
        // Binary property lists only, as every receiver answers: FoundationEssentials' XML reader
        // traps on some malformed text (an integer with bytes that are not UTF-8, found by the
        // `airplay2-setup` fuzz harness), and no receiver sends XML here.
        guard body.starts(with: Self.binaryMagic) else { throw RTSPError("not a binary property list") }
        do {
            return try PropertyListDecoder().decode(type, from: Data(body))
        } catch {
            throw RTSPError("not the property list expected: \(error)")
        }
    }
}
