/// Real-time audio delivery opened on a route: the descriptor to write PCM into, and
/// what the route made of the request.
///
/// Whoever receives it owns ``descriptor`` and closes it: closing is the end of the
/// stream (what was written still plays out). Writes are held back once the route's
/// bounded buffer is full, so a writer faster than the device waits, and one slower
/// than it is covered with silence (counted as underruns).
public struct AudioAcquisition: Sendable, Hashable {
    /// The write end of a stream socket; PCM of ``format``, frames interleaved.
    public var descriptor: Int32
    /// The format accepted (always the one asked for: a format the route cannot take is refused).
    public var format: SampleBuffer.Format
    /// From a write to its sound: the route's buffering and the device's.
    public var latency: Duration

    public init(descriptor: Int32, format: SampleBuffer.Format, latency: Duration) {
        self.descriptor = descriptor
        self.format = format
        self.latency = latency
    }
}
