public import RoutingModel

/// Takes a route's real-time samples on the thread that delivers them (the I/O reactor's, once
/// per delivery period), for a device whose work per buffer is short and never blocks —
/// encoding a Bluetooth codec frame and a non-blocking send. Each buffer then costs no wake-up
/// of another thread: for an SBC stream that hop was a third of its CPU (Docs/benchmarks.md).
/// Flushes still come through ``RealtimeSampleHandling/flushRealtimeSamples(session:)``, after
/// every buffer handed over before them.
public protocol RealtimeSampleReceiver: Sendable {
    /// One buffer, in presentation order; returns false when the device could not take it
    /// (counted as dropped). Must not block or wait for an actor.
    func receive(_ buffer: SampleBuffer) -> Bool
}
