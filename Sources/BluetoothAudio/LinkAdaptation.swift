/// When to step an encoder's bit rate: down as soon as the link is congested (the socket
/// refused a packet, or its send queue holds more than a few) or the box is (encoding takes
/// more than `overloadedShare` of the audio's own time: a small box cannot keep up with a
/// rich codec at its top rate, and a lower rate costs less), at most twice a second of audio;
/// back up one step after ten seconds of audio without congestion — as PipeWire's A2DP sink
/// does. Time is the audio's own (samples sent), so the decision is the same however fast the
/// packets are written, and tests need no clock.
///
/// A box can be too slow for a codec at any of its rates: ``codecTooCostly`` says so once
/// encoding took longer than the audio itself for a second of it, or more than
/// `overloadedShare` of it for a second at the lowest rate; the route then moves to a cheaper
/// codec (SBC) rather than drop most of its audio.
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
    /// Half seconds of audio in a row that could not be encoded in time at all (encoding took
    /// longer than the audio), or not at the encoder's lowest rate (more than ``overloadedShare``).
    public private(set) var hopelessWindows = 0
    /// The encoder refused a step down: it runs at its lowest rate.
    public private(set) var atLowestRate = false
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
            let audioSeconds = Double(windowSamples) / Double(sampleRate)
            overloaded = encodingSeconds > overloadedShare * audioSeconds
            if overloaded { overloadedWindows += 1 }
            hopelessWindows = encodingSeconds > audioSeconds || (overloaded && atLowestRate) ? hopelessWindows + 1 : 0
            encodingSeconds = 0
            windowSamples = 0
        }
        let congested = dropped > 0 || queuedPackets >= congestedQueue || overloaded
        clean = congested ? 0 : clean &+ max(0, samples)
        if congested, sinceStep >= sampleRate / 2 { return .down }
        if clean >= sampleRate * 10, sinceStep >= sampleRate * 10 { return .up }
        return nil
    }

    /// The box cannot encode this codec in real time: for a second of audio, encoding took
    /// longer than the audio, or more than ``overloadedShare`` of it at the lowest rate.
    public var codecTooCostly: Bool { hopelessWindows >= 2 }

    /// The encoder took `step` (or was at its end: the wait starts again either way).
    public mutating func stepped(_ step: Step, taken: Bool) {
        sinceStep = 0
        if step == .up { clean = 0 }
        if step == .down { atLowestRate = !taken } else if taken { atLowestRate = false }
        guard taken else { return }
        if step == .down { stepsDown += 1 } else { stepsUp += 1 }
    }
}
