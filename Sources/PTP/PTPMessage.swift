/// The IEEE 1588-2008 (PTPv2) messages an AirPlay 2 sender and its receivers exchange over
/// UDP (event port 319: Sync, Delay_Req; general port 320: Follow_Up, Delay_Resp, Announce),
/// encoded and decoded on bytes. Decoding reads only what the message's own length allows
/// and throws ``PTPError`` for anything short or inconsistent; it never traps.
public struct PTPMessage: Sendable, Hashable {
    /// The message types used here (the header's low nibble of byte 0).
    public enum Kind: UInt8, Sendable {
        case sync = 0x0
        case delayRequest = 0x1
        case followUp = 0x8
        case delayResponse = 0x9
        case announce = 0xB
        case signaling = 0xC
        case management = 0xD
    }

    /// What follows the 34-byte header.
    public enum Body: Sendable, Hashable {
        /// Sync and Delay_Req: the origin timestamp (approximate in a two-step Sync).
        case timestamp(PTPTimestamp)
        /// Follow_Up: the precise time the Sync left.
        case preciseOrigin(PTPTimestamp)
        /// Delay_Resp: when the request arrived, and whose request it was.
        case delayResponse(received: PTPTimestamp, requester: PTPPortIdentity)
        case announce(PTPAnnounce)
        /// Types this side does not act on (signaling, management): the bytes after the header.
        case other([UInt8])
    }

    public var kind: Kind
    public var domain: UInt8 = 0
    /// The header's flags; bit 0x0200 is "two-step" (a Follow_Up carries the Sync's time).
    public var flags: UInt16 = 0
    /// The correction field, in nanoseconds × 2¹⁶.
    public var correction: Int64 = 0
    public var source: PTPPortIdentity
    public var sequence: UInt16
    /// log₂ of the interval between such messages, in seconds (−3: eight a second).
    public var logInterval: Int8 = 0x7F
    public var body: Body

    public static let headerLength = 34
    public static let twoStepFlag: UInt16 = 0x0200
    /// A message longer than this is not one of ours: the datagram is refused.
    public static let maximumLength = 1500

    public init(kind: Kind, source: PTPPortIdentity, sequence: UInt16, flags: UInt16 = 0, logInterval: Int8 = 0x7F, body: Body) {
        self.kind = kind
        self.source = source
        self.sequence = sequence
        self.flags = flags
        self.logInterval = logInterval
        self.body = body
    }

    /// The UDP port the message goes to: event messages 319, general ones 320.
    public var port: UInt16 { kind == .sync || kind == .delayRequest ? 319 : 320 }

    /// The control field PTPv1 hardware still reads (0 Sync, 1 Delay_Req, 2 Follow_Up, 3 Delay_Resp, 5 others).
    private var control: UInt8 {
        switch kind {
        case .sync: 0
        case .delayRequest: 1
        case .followUp: 2
        case .delayResponse: 3
        default: 5
        }
    }

    public var bytes: [UInt8] {
        var body: [UInt8] = []
        switch self.body {
        case .timestamp(let time), .preciseOrigin(let time): body = time.bytes
        case .delayResponse(let received, let requester): body = received.bytes + requester.bytes
        case .announce(let announce): body = announce.bytes
        case .other(let bytes): body = bytes
        }
        let length = Self.headerLength + body.count
        var out: [UInt8] = []
        out.reserveCapacity(length)
        out.append(kind.rawValue)
        out.append(0x02)  // PTPv2
        out += [UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length)]
        out.append(domain)
        out.append(0)
        out += [UInt8(flags >> 8), UInt8(truncatingIfNeeded: flags)]
        out += (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: correction) >> (56 - 8 * UInt64($0))) }
        out += [0, 0, 0, 0]
        out += source.bytes
        out += [UInt8(sequence >> 8), UInt8(truncatingIfNeeded: sequence)]
        out.append(control)
        out.append(UInt8(bitPattern: logInterval))
        return out + body
    }

    public init(decoding bytes: [UInt8]) throws(PTPError) {
        guard bytes.count >= Self.headerLength else { throw PTPError("a PTP message of \(bytes.count) bytes is shorter than its header") }
        guard bytes.count <= Self.maximumLength else { throw PTPError("a PTP datagram of \(bytes.count) bytes") }
        guard bytes[1] & 0x0F == 2 else { throw PTPError("PTP version \(bytes[1] & 0x0F), not 2") }
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        guard length >= Self.headerLength, length <= bytes.count else { throw PTPError("a PTP message says \(length) bytes, \(bytes.count) came") }
        guard let kind = Kind(rawValue: bytes[0] & 0x0F) else { throw PTPError("PTP message type \(bytes[0] & 0x0F)") }
        self.kind = kind
        domain = bytes[4]
        flags = UInt16(bytes[6]) << 8 | UInt16(bytes[7])
        correction = Int64(bitPattern: bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        source = PTPPortIdentity(bytes: Array(bytes[20..<30]))
        sequence = UInt16(bytes[30]) << 8 | UInt16(bytes[31])
        logInterval = Int8(bitPattern: bytes[33])
        let payload = Array(bytes[Self.headerLength..<length])
        switch kind {
        case .sync, .delayRequest, .followUp:
            guard payload.count >= PTPTimestamp.length else { throw PTPError("a PTP \(kind) without its timestamp") }
            let time = PTPTimestamp(bytes: Array(payload[0..<PTPTimestamp.length]))
            body = kind == .followUp ? .preciseOrigin(time) : .timestamp(time)
        case .delayResponse:
            guard payload.count >= PTPTimestamp.length + PTPPortIdentity.length else { throw PTPError("a PTP Delay_Resp of \(payload.count) bytes") }
            body = .delayResponse(
                received: PTPTimestamp(bytes: Array(payload[0..<PTPTimestamp.length])),
                requester: PTPPortIdentity(bytes: Array(payload[PTPTimestamp.length..<(PTPTimestamp.length + PTPPortIdentity.length)])))
        case .announce:
            body = .announce(try PTPAnnounce(bytes: payload))
        case .signaling, .management:
            body = .other(payload)
        }
    }
}
