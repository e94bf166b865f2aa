#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Logging
public import RoutingModel

/// The picks a box remembers to suggest routes, learned on the box: which device was
/// chosen for which application, kind of content and time of day. Bounded (the
/// newest ``capacity`` picks) and plain data, so it is kept in a small state file.
public struct RouteSuggestionHistory: Sendable, Hashable, Codable {
    /// One remembered pick. `deviceID` nil means the person chose to play on the box.
    public struct Pick: Sendable, Hashable, Codable {
        public var application: String
        public var content: PlaybackContent
        /// 0–23, local time.
        public var hour: Int
        public var deviceID: String?
        public var displayName: String?

        public init(application: String, content: PlaybackContent, hour: Int, deviceID: String?, displayName: String?) {
            self.application = application
            self.content = content
            self.hour = hour
            self.deviceID = deviceID
            self.displayName = displayName
        }
    }

    /// The format tag of the state file; a file with another one is foreign.
    public static let format = "mediaroute.route-suggestions.v1"
    public static let capacity = 200

    public var format: String = Self.format
    public private(set) var picks: [Pick] = []

    public init() {}

    /// Remembers a pick (the oldest one goes past ``capacity``).
    public mutating func record(_ pick: Pick) {
        picks.append(pick)
        if picks.count > Self.capacity { picks.removeFirst(picks.count - Self.capacity) }
    }

    /// The route to suggest for `content` from `application` at `hour`, among `available` devices
    /// (those present and able to play it). With no history: long-form video goes to a TV
    /// when one is reachable; anything else plays locally.
    public func suggestion(
        for content: PlaybackContent, application: String, hour: Int, available: [SystemDevice]
    ) -> RouteSuggestion {
        var scores: [String?: Double] = [:]
        for pick in picks {
            // A device that is gone is never suggested.
            if let id = pick.deviceID, !available.contains(where: { $0.id == id }) { continue }
            var weight = 1.0
            if pick.application == application { weight += 3 }
            if pick.content.isVideo == content.isVideo { weight += 2 } else { weight -= 0.75 }
            if pick.content.isLongForm == content.isLongForm { weight += 1 }
            let distance = min(abs(pick.hour - hour), 24 - abs(pick.hour - hour))
            weight += distance <= 1 ? 2 : distance <= 3 ? 1 : 0
            scores[pick.deviceID, default: 0] += max(weight, 0)
        }
        if let best = scores.max(by: { $0.value < $1.value || ($0.value == $1.value && ($0.key ?? "") > ($1.key ?? "")) }), best.value > 0 {
            guard let id = best.key, let device = available.first(where: { $0.id == id }) else { return .local }
            return .external(deviceID: device.id, displayName: device.displayName)
        }
        if content.isVideo && content.isLongForm, let tv = available.first(where: { $0.deviceType.isVideo }) {
            return .external(deviceID: tv.id, displayName: tv.displayName)
        }
        return .local
    }
}
