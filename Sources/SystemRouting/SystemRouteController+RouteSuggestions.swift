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

/// The local hour (0–23) now: what suggestions weigh as time of day. Injected in tests.
public func currentLocalHour() -> Int {
    var now = time(nil)
    var parts = tm()
    localtime_r(&now, &parts)
    return Int(parts.tm_hour)
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
