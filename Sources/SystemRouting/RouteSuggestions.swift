#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
public import Logging
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

/// The history in a state file (the unit's `StateDirectory`, `/var/lib/mediaroute`):
/// read once, written after each pick through a temporary file and a rename. A file
/// that is corrupt, foreign or too large is ignored with one log line and rewritten.
public actor RouteSuggestionStore {
    public static let defaultPath = "/var/lib/mediaroute/route-suggestions.json"
    /// Larger than any history of ``RouteSuggestionHistory/capacity`` picks.
    static let maximumFileSize = 256 * 1024

    public let path: String?
    public private(set) var history: RouteSuggestionHistory
    private let logger: Logger

    /// - Parameter path: nil keeps the history in memory only.
    public init(path: String?, logger: Logger = Logger(label: "mediaroute.suggestions")) {
        self.path = path
        self.logger = logger
        history = Self.load(path: path, logger: logger)
    }

    static func load(path: String?, logger: Logger) -> RouteSuggestionHistory {
        guard let path, let data = FileManager.default.contents(atPath: path) else { return RouteSuggestionHistory() }
        guard data.count <= maximumFileSize,
            let history = try? JSONDecoder().decode(RouteSuggestionHistory.self, from: data),
            history.format == RouteSuggestionHistory.format,
            history.picks.count <= RouteSuggestionHistory.capacity,
            history.picks.allSatisfy({ (0..<24).contains($0.hour) })
        else {
            logger.warning("route suggestion history ignored (corrupt or not ours); it is rewritten", metadata: ["path": "\(path)"])
            return RouteSuggestionHistory()
        }
        return history
    }

    /// Remembers a pick and saves the history.
    public func record(_ pick: RouteSuggestionHistory.Pick) {
        history.record(pick)
        save()
    }

    public func suggestion(
        for content: PlaybackContent, application: String, hour: Int, available: [SystemDevice]
    ) -> RouteSuggestion {
        history.suggestion(for: content, application: application, hour: hour, available: available)
    }

    private func save() {
        guard let path else { return }
        do {
            let data = try JSONEncoder().encode(history)
            // A reader never sees half a file: the new one replaces the old by rename(2).
            let temporary = path + ".tmp"
            guard FileManager.default.createFile(atPath: temporary, contents: data), rename(temporary, path) == 0 else {
                logger.warning("route suggestion history not saved", metadata: ["path": "\(path)"])
                return
            }
        } catch {
            logger.warning("route suggestion history not saved", metadata: ["path": "\(path)", "error": "\(error)"])
        }
    }
}

/// The local hour (0–23) now: what suggestions weigh as time of day. Injected in tests.
public func currentLocalHour() -> Int {
    var now = time(nil)
    var parts = tm()
    localtime_r(&now, &parts)
    return Int(parts.tm_hour)
}

/// What the person chose in a route picker.
public enum RouteChoice: Sendable, Hashable {
    case local
    case device(RoutePickerEntry)
    case cancelled
}

/// Shows the person a route picker (a UI, a CLI prompt) and returns their choice.
public protocol RouteSelectionPresenter: Sendable {
    /// `entries` are sorted with `suggested` (if any) first.
    func chooseRoute(from entries: [RoutePickerEntry], suggested: RoutePickerEntry?) async -> RouteChoice
}

/// The outcome of ``SystemRouteController/prepareRouteSelectionForPlayback(content:suggestions:presenter:automaticallySelectsLongFormRoute:discoveryTime:hour:)``.
public enum RouteSelection: Sendable {
    /// Play on the box.
    case local
    /// Play on this route (already active).
    case external(SystemRoute)
    /// The person closed the picker without choosing.
    case cancelled
}

extension SystemRouteController {
    /// Before playback starts (the seeds' `prepareRouteSelectionForPlayback`): discovers for
    /// `discoveryTime`, suggests a route from what this box learned, lets the person choose
    /// with the suggestion first, remembers the choice and activates the route chosen.
    /// Nothing connects without the person's choice, unless the app opted into automatic
    /// selection for long-form content and a route is suggested.
    public func prepareRouteSelectionForPlayback(
        content: PlaybackContent, suggestions: RouteSuggestionStore, presenter: any RouteSelectionPresenter,
        automaticallySelectsLongFormRoute: Bool = false, discoveryTime: Duration = .seconds(2), hour: Int = currentLocalHour()
    ) async throws -> RouteSelection {
        let picker = makePicker(prioritizesVideoDevices: content.isVideo)
        await picker.open()
        try? await clock.sleep(for: discoveryTime)
        let entries = await picker.entries().filter(\.isAvailable)
        let devices = await system.devicesList.filter { device in
            device.isAvailable && entries.contains { $0.id == device.id } && device.capabilities.contains(.urlPlayback)
        }
        let suggestion = await suggestions.suggestion(for: content, application: applicationIdentifier, hour: hour, available: devices)
        var suggested: RoutePickerEntry?
        if case .external(let id, _) = suggestion { suggested = entries.first { $0.id == id } }
        let choice: RouteChoice
        if automaticallySelectsLongFormRoute && content.isLongForm, let suggested {
            choice = .device(suggested)
        } else {
            let ordered = suggested.map { first in [first] + entries.filter { $0.id != first.id } } ?? entries
            choice = await presenter.chooseRoute(from: ordered, suggested: suggested)
        }
        defer { Task { await picker.close() } }
        switch choice {
        case .cancelled:
            return .cancelled
        case .local:
            await suggestions.record(.init(application: applicationIdentifier, content: content, hour: hour, deviceID: nil, displayName: nil))
            return .local
        case .device(let entry):
            let route = try await picker.pick(entry, features: [.urlPlayback])
            await suggestions.record(.init(
                application: applicationIdentifier, content: content, hour: hour, deviceID: entry.id, displayName: entry.displayName))
            return .external(route)
        }
    }
}
