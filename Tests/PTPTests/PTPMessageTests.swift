import Testing
@testable import PTP

/// PTP messages against what Debian's linuxptp (`ptp4l` 3.1.1, software timestamps, UDPv4)
/// sent across a veth pair (captured 2026-11-29): the same fields encode to the same bytes.
@Suite struct PTPMessageTests {
    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    static let ptp4lSync = bytes("0002002c000002000000000000000000000000007ecabbfffe53eefc0001000000fd00000000000000000000")
    static let ptp4lFollowUp = bytes("0802002c000000000000000000000000000000007ecabbfffe53eefc0001000002fd00006b0b8184298f8ab6")
    static let ptp4lAnnounce = bytes(
        "0b020040000000000000000000000000000000007ecabbfffe53eefc0001000005000000000000000000000000250001f8feffff807ecabbfffe53eefc0000a0")
    static let source = PTPPortIdentity(clock: 0x7ECA_BBFF_FE53_EEFC, port: 1)

    @Test func ptp4lsMessagesDecodeAndOursEncodeTheSame() throws {
        let sync = try PTPMessage(decoding: Self.ptp4lSync)
        #expect(sync.kind == .sync && sync.flags == PTPMessage.twoStepFlag && sync.sequence == 0 && sync.logInterval == -3)
        #expect(sync.source == Self.source)
        #expect(PTPMessage(kind: .sync, source: Self.source, sequence: 0, flags: PTPMessage.twoStepFlag, logInterval: -3, body: .timestamp(PTPTimestamp(seconds: 0, nanoseconds: 0))).bytes == Self.ptp4lSync)

        let followUp = try PTPMessage(decoding: Self.ptp4lFollowUp)
        guard case .preciseOrigin(let time) = followUp.body else { Issue.record("not a Follow_Up: \(followUp)"); return }
        #expect(time == PTPTimestamp(seconds: 0x6B0B_8184, nanoseconds: 0x298F_8AB6))
        #expect(PTPMessage(kind: .followUp, source: Self.source, sequence: 0, logInterval: -3, body: .preciseOrigin(time)).bytes == Self.ptp4lFollowUp)

        let announce = try PTPMessage(decoding: Self.ptp4lAnnounce)
        guard case .announce(let body) = announce.body else { Issue.record("not an Announce: \(announce)"); return }
        #expect(body.priority1 == 1 && body.clockClass == 248 && body.priority2 == 128 && body.grandmaster == Self.source.clock && body.utcOffset == 37)
        #expect(PTPMessage(kind: .announce, source: Self.source, sequence: 0, logInterval: 0, body: .announce(PTPAnnounce(priority1: 1, priority2: 128, grandmaster: Self.source.clock))).bytes == Self.ptp4lAnnounce)
        #expect(announce.port == 320 && sync.port == 319)
    }

    @Test func aDelayResponseCarriesTheRequester() throws {
        let requester = PTPPortIdentity(hardwareAddress: [0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC], port: 2)
        #expect(requester.clock == 0x1234_56FF_FE78_9ABC)
        let response = PTPMessage(kind: .delayResponse, source: Self.source, sequence: 7, body: .delayResponse(received: PTPTimestamp(.seconds(5) + .nanoseconds(12)), requester: requester))
        let bytes = response.bytes
        #expect(bytes.count == 54)
        #expect(try PTPMessage(decoding: bytes) == response)
    }

    @Test func shortLyingAndForeignDatagramsAreTypedErrors() {
        #expect(throws: PTPError.self) { try PTPMessage(decoding: Array(Self.ptp4lSync.prefix(33))) }
        var longer = Self.ptp4lSync
        longer[3] = 0x40  // says 64 bytes, 44 came
        #expect(throws: PTPError.self) { try PTPMessage(decoding: longer) }
        var version1 = Self.ptp4lSync
        version1[1] = 1
        #expect(throws: PTPError.self) { try PTPMessage(decoding: version1) }
        var headerOnly = Self.ptp4lAnnounce
        headerOnly[3] = 34
        #expect(throws: PTPError.self) { try PTPMessage(decoding: headerOnly) }
        var unknown = Self.ptp4lSync
        unknown[0] = 0x03
        #expect(throws: PTPError.self) { try PTPMessage(decoding: unknown) }
    }

    @Test func timestampsConvertWithoutTrapping() {
        let time = PTPTimestamp(.seconds(3) + .milliseconds(250))
        #expect(time.seconds == 3 && time.nanoseconds == 250_000_000)
        #expect(time.duration == .milliseconds(3250))
        #expect(PTPTimestamp(.seconds(-5)).seconds == 0)
        #expect(PTPTimestamp(seconds: .max, nanoseconds: .max).totalNanoseconds != 0)
        #expect(!PTPTimestamp(seconds: 1, nanoseconds: 1_000_000_000).isValid)
    }
}
