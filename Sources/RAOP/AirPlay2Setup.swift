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
/// Our bodies are written by ``BinaryPropertyList`` (why not FoundationEssentials' encoder:
/// see there); a receiver's answer is decoded by FoundationEssentials' `PropertyListDecoder`
/// from at most ``maximumBody`` bytes, and a malformed one is a typed ``RTSPError``, never a trap.
public enum AirPlay2Setup {
    /// The most bytes of a receiver's property list we decode.
    public static let maximumBody = 64 * 1024
    /// How every binary property list begins.
    static let binaryMagic = Array("bplist00".utf8)
    /// The `Content-Type` of every body here.
    public static let contentType = "application/x-apple-binary-plist"

    /// A clock of the session's timing: the sender's PTP master (its clock identity), at the
    /// sender's addresses.
    public struct TimingPeer: Sendable, Hashable {
        public var id: String
        public var addresses: [String]
        public var clockIdentity: UInt64

        public init(id: String, addresses: [String], clockIdentity: UInt64) {
            self.id = id
            self.addresses = addresses
            self.clockIdentity = clockIdentity
        }

        /// The clock id is written as a signed 64-bit number, as the receivers' plists hold it.
        public var propertyList: BinaryPropertyList.Value {
            .dictionary([
                ("ID", .string(id)), ("Addresses", .array(addresses.map { .string($0) })), ("DeviceType", .integer(0)),
                ("ClockID", .integer(Int64(bitPattern: clockIdentity))), ("SupportsClockPortMatchingOverride", .bool(false)),
            ])
        }
    }

    /// How a session is timed: by our PTP master (the timing peer), or by NTP exchanges the
    /// receiver starts with our timing port, as AirPlay 1's.
    public enum Timing: Sendable, Hashable {
        case ptp(TimingPeer)
        case ntp(port: UInt16)
    }

    /// The first `SETUP`: who we are and how the session is timed.
    public struct Session: Sendable, Hashable {
        public var name: String
        public var deviceID: String
        public var sessionUUID: String
        public var groupUUID: String
        public var timing: Timing

        public init(name: String, deviceID: String, sessionUUID: String, groupUUID: String, timing: Timing) {
            self.name = name
            self.deviceID = deviceID
            self.sessionUUID = sessionUUID
            self.groupUUID = groupUUID
            self.timing = timing
        }

        /// PTP as OwnTone and iOS send it (with the group and the timing peers); NTP as OwnTone
        /// sends it (the timing port instead: no group, no peers).
        public var propertyList: BinaryPropertyList.Value {
            switch timing {
            case .ptp(let peer):
                .dictionary([
                    ("name", .string(name)), ("deviceID", .string(deviceID)), ("sessionUUID", .string(sessionUUID)), ("timingProtocol", .string("PTP")),
                    ("macAddress", .string(deviceID)), ("groupUUID", .string(groupUUID)), ("groupContainsGroupLeader", .bool(false)),
                    ("timingPeerInfo", peer.propertyList), ("timingPeerList", .array([peer.propertyList])),
                ])
            case .ntp(let port):
                .dictionary([
                    ("name", .string(name)), ("deviceID", .string(deviceID)), ("sessionUUID", .string(sessionUUID)), ("timingProtocol", .string("NTP")),
                    ("timingPort", .integer(Int64(port))), ("macAddress", .string(deviceID)), ("groupUUID", .string(groupUUID)),
                ])
            }
        }
    }

    /// One stream of the second `SETUP`: real-time ALAC (type 96, `ct` 2, format bit 18:
    /// ALAC/44100/16/2, 352 frames a packet, over UDP), or buffered AAC-LC (type 103, `ct` 4,
    /// format bit 22: AAC-LC/44100/2, 1 024 frames a packet, over TCP); sealed with the stream key `shk`.
    public struct Stream: Sendable, Hashable {
        /// Real time (UDP, sync packets) or buffered (TCP, rate anchors).
        public enum Kind: Sendable, Hashable {
            case realtimeALAC
            case bufferedAAC
        }

        /// Our control port: the receiver's resend requests come from there, our sync packets go to its own.
        public var controlPort: UInt16
        /// The stream key (32 bytes): every audio packet is sealed with it.
        public var key: [UInt8]
        public var connectionID: UInt64
        public var latencyFrames: UInt32
        public var kind: Kind

        public init(controlPort: UInt16, key: [UInt8], connectionID: UInt64, latencyFrames: UInt32, kind: Kind = .realtimeALAC) {
            self.controlPort = controlPort
            self.key = key
            self.connectionID = connectionID
            self.latencyFrames = max(latencyFrames, 11_025)
            self.kind = kind
        }

        public var propertyList: BinaryPropertyList.Value {
            let buffered = kind == .bufferedAAC
            return .dictionary([
                ("audioFormat", .integer(buffered ? 0x40_0000 : 0x40000)), ("audioMode", .string("default")), ("controlPort", .integer(Int64(controlPort))),
                ("ct", .integer(buffered ? 4 : 2)), ("isMedia", .bool(true)), ("latencyMax", .integer(Int64(latencyFrames))), ("latencyMin", .integer(11_025)),
                ("shk", .data(key)), ("spf", .integer(buffered ? 1_024 : 352)), ("sr", .integer(44_100)), ("type", .integer(buffered ? 103 : 96)),
                ("supportsDynamicStreamID", .bool(false)), ("streamConnectionID", .integer(Int64(bitPattern: connectionID))),
            ])
        }
    }

    /// `SETRATEANCHORTIME`'s body for a buffered stream: at `networkTime` on the clock
    /// `clockIdentity` the frame `rtpTime` plays (rate 1), or playing stops (rate 0). The time
    /// goes as whole seconds and a 64-bit binary fraction, as the receivers read it.
    public static func rateAnchor(playing: Bool, rtpTime: UInt32, networkTime: Duration, clockIdentity: UInt64) -> BinaryPropertyList.Value {
        let (seconds, attoseconds) = networkTime.components
        // nanoseconds × 2³² / 10⁹ in the upper 32 bits: a quarter-nanosecond step (what shairport-sync keeps).
        let nanoseconds = UInt64(clamping: max(0, attoseconds / 1_000_000_000))
        let fraction = ((nanoseconds << 32) / 1_000_000_000) << 32
        return .dictionary([
            ("rate", .integer(playing ? 1 : 0)), ("rtpTime", .integer(Int64(rtpTime))), ("networkTimeSecs", .integer(max(0, seconds))),
            ("networkTimeFrac", .integer(Int64(bitPattern: fraction))), ("networkTimeTimelineID", .integer(Int64(bitPattern: clockIdentity))),
        ])
    }

    /// `FLUSHBUFFERED`'s body: drop what is buffered up to (not including) the packet
    /// `sequence` of RTP time `timestamp`.
    public static func flushBuffered(untilSequence sequence: UInt32, timestamp: UInt32) -> BinaryPropertyList.Value {
        .dictionary([("flushUntilSeq", .integer(Int64(sequence & 0x7F_FFFF))), ("flushUntilTS", .integer(Int64(timestamp)))])
    }

    /// The second `SETUP`'s body.
    public static func streams(_ streams: [Stream]) -> BinaryPropertyList.Value {
        .dictionary([("streams", .array(streams.map(\.propertyList)))])
    }

    /// `SETPEERS`' body: the addresses of the session's timing peers, ours first.
    public static func peers(_ addresses: [String]) -> BinaryPropertyList.Value {
        .array(addresses.map { .string($0) })
    }

    /// The receiver's answer to the first `SETUP`.
    public struct SessionReply: Decodable, Sendable, Hashable {
        /// The TCP port of its event channel (0 or absent: none).
        public var eventPort: UInt16?
        public var timingPort: UInt16?
    }

    /// What the receiver answers for a stream: where the audio and sync packets go.
    public struct StreamReply: Decodable, Sendable, Hashable {
        public var type: UInt64?
        public var dataPort: UInt16?
        public var controlPort: UInt16?
        /// A buffered stream: how many bytes the receiver holds ahead of playing.
        public var audioBufferSize: UInt64?
    }

    /// The receiver's answer to the second `SETUP`.
    public struct StreamsReply: Decodable, Sendable, Hashable {
        public var streams: [StreamReply]
    }

    /// `value` as a binary property list.
    public static func encode(_ value: BinaryPropertyList.Value) -> [UInt8] {
        BinaryPropertyList.encode(value)
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
