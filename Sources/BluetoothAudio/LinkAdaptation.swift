/// When to step an encoder's bit rate: down as soon as the link is congested (the socket
/// refused a packet, or its send queue holds more than a few) or the box is (encoding takes
/// more than `overloadedShare` of the audio's own time: a small box cannot keep up with a
/// rich codec at its top rate, and a lower rate costs less), at most twice a second of audio;
/// back up one step after ten seconds of audio without congestion — as PipeWire's A2DP sink
/// does. Time is the audio's own (samples sent), so the decision is the same however fast the
/// packets are written, and tests need no clock.
public struct LinkAdaptation: Sendable, Hashable {
    public enum Step: Sendable, Hashable {
        case down
        case up
    }

    public let sampleRate: Int
    /// Packets waiting in the socket's queue that count as congestion.
    public let congestedQueue: Int
    /// The share of the audio's time that encoding may take before the box counts as overloaded.
    public let overloadedShare: Double
    private var sinceStep = 0
    private var encodingSeconds = 0.0
    private var windowSamples = 0
    private var clean = 0
    /// Packets the socket refused (dropped) since the stream started.
    public private(set) var droppedPackets: UInt64 = 0
    /// Half seconds of audio whose encoding took more than ``overloadedShare`` of their time.
    public private(set) var overloadedWindows = 0
    /// Steps taken each way since the stream started.
    public private(set) var stepsDown = 0
    public private(set) var stepsUp = 0

    public init(sampleRate: Int, congestedQueue: Int = 6, overloadedShare: Double = 0.5) {
        self.sampleRate = max(1, sampleRate)
        self.congestedQueue = congestedQueue
        self.overloadedShare = overloadedShare
    }

    /// Records one delivery of `samples` frames: `dropped` packets the socket refused, and the
    /// packets its queue holds now. Returns the step to take, if any; the caller reports back
    /// with ``stepped(_:)`` when the encoder could take it.
    /// - Parameter encoding: how long encoding these samples took (nil: not measured).
    public mutating func record(samples: Int, dropped: Int, queuedPackets: Int, encoding: Duration? = nil) -> Step? {
        sinceStep = sinceStep &+ max(0, samples)
        droppedPackets &+= UInt64(max(0, dropped))
        // The box's load over the last half second of audio.
        if let encoding {
            encodingSeconds += Double(encoding.components.seconds) + Double(encoding.components.attoseconds) * 1e-18
            windowSamples &+= max(0, samples)
        }
        var overloaded = false
        if windowSamples >= sampleRate / 2 {
            overloaded = encodingSeconds > overloadedShare * Double(windowSamples) / Double(sampleRate)
            if overloaded { overloadedWindows += 1 }
            encodingSeconds = 0
            windowSamples = 0
        }
        let congested = dropped > 0 || queuedPackets >= congestedQueue || overloaded
        clean = congested ? 0 : clean &+ max(0, samples)
        if congested, sinceStep >= sampleRate / 2 { return .down }
        if clean >= sampleRate * 10, sinceStep >= sampleRate * 10 { return .up }
        return nil
    }

    /// The encoder took `step` (or was at its end: the wait starts again either way).
    public mutating func stepped(_ step: Step, taken: Bool) {
        sinceStep = 0
        if step == .up { clean = 0 }
        guard taken else { return }
        if step == .down { stepsDown += 1 } else { stepsUp += 1 }
    }
}
