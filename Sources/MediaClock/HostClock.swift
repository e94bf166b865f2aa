import Synchronization

/// A monotonic clock that behaviour depending on time reads and sleeps on.
///
/// Timeouts, expiry, playback-position extrapolation and clock sync all take a
/// `HostClock` so that tests and simulations can run on ``ManualHostClock``
/// and finish in microseconds, while production uses ``SystemHostClock``.
/// Times are `Duration`s since an arbitrary, fixed origin ("host time").
public protocol HostClock: Sendable {
    /// The current host time.
    func now() -> Duration
    /// Suspends until host time reaches `deadline`; throws `CancellationError` when cancelled.
    func sleep(until deadline: Duration) async throws
}

extension HostClock {
    /// Suspends for `duration` of host time.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now() + duration)
    }
}

extension Duration {
    /// The duration as floating-point seconds.
    public var seconds: Double {
        let (whole, atto) = components
        return Double(whole) + Double(atto) * 1e-18
    }

    /// A duration from floating-point seconds (rounded to nanoseconds).
    public static func seconds(double value: Double) -> Duration {
        .nanoseconds(Int64((value * 1e9).rounded()))
    }
}
