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
