#if AirPlay
public import Coordination
public import RAOPExtension

/// The box's PTP master (``PTPTimingService``) as the AirPlay extension's timing: what the
/// catalogue hands it, and what tests and benchmarks hand it on ports of their own.
public struct PTPAirPlayTiming: AirPlayTimingMaster {
    public let service: PTPTimingService

    public init(service: PTPTimingService) { self.service = service }

    public var clockIdentity: UInt64 { service.clockIdentity }
    public func now() -> Duration { service.now() }
    public func follow(_ host: String) throws { try service.follow(host) }
    public func stopFollowing(_ host: String) { service.stopFollowing(host) }

    public func reading(for host: String) -> AirPlayClockReading {
        let reading = service.reading(for: host)
        return AirPlayClockReading(clockIdentity: reading.clockIdentity, time: reading.time)
    }

    public func settle(_ host: String, limit: Duration) async { await service.settle(host, limit: limit) }

    public func measuresPathDelay(_ host: String) -> Bool { service.measuresPathDelay(host) }
}
#endif
