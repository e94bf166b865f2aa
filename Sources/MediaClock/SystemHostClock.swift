import Synchronization

/// The real monotonic clock (`CLOCK_MONOTONIC` through `ContinuousClock`).
public struct SystemHostClock: HostClock {
    private static let origin = ContinuousClock.now

    public init() {}

    public func now() -> Duration {
        ContinuousClock.now - Self.origin
    }

    public func sleep(until deadline: Duration) async throws {
        try await ContinuousClock().sleep(until: Self.origin + deadline, tolerance: nil)
    }
}
