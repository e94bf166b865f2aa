

/// The UDP packets of a RAOP stream (AirPlay 1).
public enum RAOPPacket {
    /// Payload type of audio (96), with the marker bit on the first packet of a stream.
    public static func audio(sequence: UInt16, timestamp: UInt32, ssrc: UInt32, first: Bool, payload: [UInt8]) -> [UInt8] {
        [0x80, first ? 0xE0 : 0x60] + bigEndian(sequence) + bigEndian(timestamp) + bigEndian(ssrc) + payload
    }

    /// A sync packet (to the receiver's control port): the frame `playingTimestamp` plays at
    /// `now`; `nextTimestamp` is the stream's position. With the flags of 7 the receiver adds
    /// its fixed 11 025 frames (0.25 s) to the difference, as it does for iTunes.
    public static func sync(playingTimestamp: UInt32, now: NTPTimestamp, nextTimestamp: UInt32, first: Bool) -> [UInt8] {
        [first ? 0x90 : 0x80, 0xD4, 0x00, 0x07] + bigEndian(playingTimestamp) + now.bytes + bigEndian(nextTimestamp)
    }

    /// The answer to a timing request: its transmit time as our origin, when we got it, and now.
    public static func timingReply(to request: TimingRequest, received: NTPTimestamp, transmitted: NTPTimestamp) -> [UInt8] {
        [0x80, 0xD3, 0x00, 0x07, 0, 0, 0, 0] + request.transmitted.bytes + received.bytes + transmitted.bytes
    }

    /// An audio packet sent again (to the receiver's control port), as it asked.
    public static func resent(_ packet: [UInt8]) -> [UInt8] {
        [0x80, 0xD6, 0x00, 0x01] + packet
    }
}
