/// How a receiver is played when the box maker overrides what its `features` say
/// (`[lan] airplay-protocols = Den TV: airplay1, Porch: airplay2-ntp`): for a receiver whose
/// AirPlay 2 misbehaves with this sender, or one that announces PTP but follows it badly.
public enum AirPlayProtocolChoice: String, Sendable, Hashable, CaseIterable {
    /// AirPlay 1 (RAOP) on its `_raop._tcp` service, NTP-timed.
    case airPlay1 = "airplay1"
    /// AirPlay 2, timed as its `features` ask (PTP with bit 41, else NTP).
    case airPlay2 = "airplay2"
    /// AirPlay 2 timed by PTP whatever its `features` say.
    case airPlay2PTP = "airplay2-ptp"
    /// AirPlay 2 timed by NTP whatever its `features` say.
    case airPlay2NTP = "airplay2-ntp"
    /// AirPlay 2 timed by PTP with a buffered stream (type 103: AAC-LC over TCP, anchored by
    /// `SETRATEANCHORTIME`) instead of a real-time one (type 96: ALAC over UDP): for a receiver
    /// that plays buffered streams better (the network loses UDP packets on the way to it).
    case airPlay2Buffered = "airplay2-buffered"
}
