public import HAP

/// The UDP packets of an AirPlay 2 real-time stream (type 96): audio sealed with the
/// stream key, and the sync ("time announce", 215) packets that tie an RTP time to the PTP
/// master's clock.
public enum AirPlay2Packet {
    /// The receiver's fixed part of the latency, which it adds to what a sync packet says
    /// (shairport-sync 5: 11 035 frames).
    public static let receiverFixedFrames: UInt32 = 11_035

    /// An audio packet: the RTP header in clear (payload type 96, the marker on the first),
    /// the ALAC frame sealed with ChaCha20-Poly1305 under `key` — the header's timestamp and
    /// SSRC as additional data, the nonce 4 zero bytes and 8 of the sequence number — then the
    /// tag and the nonce's last 8 bytes. The nonce follows the sequence number so that a packet
    /// sent again is the same bytes (as OwnTone does; a stream key serves one stream only).
    public static func audio(sequence: UInt16, timestamp: UInt32, ssrc: UInt32, first: Bool, payload: [UInt8], key: [UInt8]) throws(HAPError) -> [UInt8] {
        let header = RAOPPacket.audio(sequence: sequence, timestamp: timestamp, ssrc: ssrc, first: first, payload: [])
        let nonceTail: [UInt8] = [UInt8(truncatingIfNeeded: sequence), UInt8(truncatingIfNeeded: sequence >> 8), 0, 0, 0, 0, 0, 0]
        let sealed = try HAPCrypto.seal(payload, key: key, nonce: [0, 0, 0, 0] + nonceTail, aad: Array(header[4..<12]))
        return header + sealed + nonceTail
    }

    /// The SSRC of a buffered stream's AAC-LC 44.1 kHz stereo packets: shairport-sync 5 (and
    /// Apple's receivers) tell the format of a buffered packet by it.
    public static let bufferedAACSSRC: UInt32 = 0x1600_0000

    /// A buffered stream's packet (type 103, over TCP): a 2-byte big-endian length counting
    /// itself, then the RTP header — the marker set and a 23-bit sequence number in the first
    /// word, the timestamp, the SSRC naming the format — then the access unit sealed as
    /// ``audio(sequence:timestamp:ssrc:first:payload:key:)`` seals a frame, its tag and the
    /// nonce's last 8 bytes (the sequence number).
    public static func bufferedAudio(sequence: UInt32, timestamp: UInt32, payload: [UInt8], key: [UInt8]) throws(HAPError) -> [UInt8] {
        let sequence = sequence & 0x7F_FFFF
        let header: [UInt8] = [0x80, 0x80 | UInt8(truncatingIfNeeded: sequence >> 16), UInt8(truncatingIfNeeded: sequence >> 8), UInt8(truncatingIfNeeded: sequence)]
            + bigEndian(timestamp) + bigEndian(bufferedAACSSRC)
        let nonceTail: [UInt8] = (0..<8).map { UInt8(truncatingIfNeeded: UInt64(sequence) >> (8 * UInt64($0))) }
        let sealed = try HAPCrypto.seal(payload, key: key, nonce: [0, 0, 0, 0] + nonceTail, aad: Array(header[4..<12]))
        // Bounded by the caller (an access unit is a few hundred bytes); a length past 16 bits is refused, never wrapped.
        let length = 2 + header.count + sealed.count + nonceTail.count
        guard length <= Int(UInt16.max) else { throw HAPError(.malformed, "a buffered packet of \(length) bytes") }
        return [UInt8(length >> 8), UInt8(length & 0xFF)] + header + sealed + nonceTail
    }

    /// The ALAC frame of an audio packet made by ``audio(sequence:timestamp:ssrc:first:payload:key:)``
    /// (what a receiver does; the tests and fuzzing use it). A packet too short or whose tag
    /// does not match is an error.
    public static func openAudio(_ packet: [UInt8], key: [UInt8]) throws(HAPError) -> (sequence: UInt16, timestamp: UInt32, payload: [UInt8]) {
        guard packet.count >= 12 + 16 + 8 else { throw HAPError(.malformed, "an AirPlay 2 audio packet of \(packet.count) bytes") }
        let nonce = [0, 0, 0, 0] + packet[(packet.count - 8)...]
        let payload = try HAPCrypto.open(Array(packet[12..<(packet.count - 8)]), key: key, nonce: nonce, aad: Array(packet[4..<12]))
        let sequence = UInt16(packet[2]) << 8 | UInt16(packet[3])
        let timestamp = packet[4..<8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return (sequence, timestamp, payload)
    }

    /// A sync packet (to the receiver's control port): the frame `playingTimestamp` plays at
    /// `masterTime` on the PTP master `clockIdentity`'s timeline, less the receiver's fixed part;
    /// `nextTimestamp` − `playingTimestamp` is the latency the receiver reports (77 175 for
    /// iTunes' two seconds).
    public static func sync(playingTimestamp: UInt32, masterTime: Duration, nextTimestamp: UInt32, clockIdentity: UInt64, first: Bool) -> [UInt8] {
        let (seconds, attoseconds) = masterTime.components
        let nanoseconds = UInt64(clamping: seconds).multipliedReportingOverflow(by: 1_000_000_000).partialValue
            &+ UInt64(clamping: attoseconds / 1_000_000_000)
        return [first ? 0x90 : 0x80, 0xD7, 0x00, 0x06] + bigEndian(playingTimestamp) + bigEndian(nanoseconds) + bigEndian(nextTimestamp)
            + bigEndian(clockIdentity)
    }
}
