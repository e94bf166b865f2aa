

/// The timing of an AirPlay 1 stream: how many frames after its sending a frame plays, made of
/// the sender's part (said in every sync packet) and the receiver's own fixed part (its
/// `Audio-Latency` in the answer to `RECORD`; 11 025 when it says none, as an AirPort Express).
public struct RAOPLatency: Sendable, Hashable {
    /// Frames between a packet's sending and its playing, as the sender wants it.
    public let total: UInt32
    /// The receiver's fixed part, at most ten seconds.
    public let receiver: UInt32

    public static let defaultReceiverFrames: UInt32 = 11_025

    public init(total: UInt32, receiverHeader: String?) {
        self.total = total
        let reported = receiverHeader.flatMap { UInt32(Substring($0).trimmingSpaces) } ?? Self.defaultReceiverFrames
        receiver = min(reported, 441_000)
    }

    /// The frame a sync packet says plays now when `position` is the stream's position: what
    /// the sender adds, so that with the receiver's part every receiver plays `total` frames
    /// after sending, whatever its own part. A receiver whose part is more than `total` plays
    /// late by the difference (``lateFrames``).
    public func playingTimestamp(position: UInt32) -> UInt32 {
        position &- (total - min(receiver, total))
    }

    /// How many frames later than `total` the receiver plays (its part is longer).
    public var lateFrames: UInt32 { receiver > total ? receiver - total : 0 }
}
