import Foundation
import LoopbackTransport
import MediaDevice
import MediaRouteTestSupport
import SystemRouting
import Testing
import RoutingModel

/// Route suggestions learned on the box (issue "a real box shows real devices").
@Suite struct RouteSuggestionTests {
    static func device(_ id: String, _ name: String, _ type: OutputDeviceDescription.DeviceType) -> SystemDevice {
        let member = OutputDeviceDescription(id: id, displayName: name, capabilities: [.urlPlayback], deviceType: type)!
        return SystemDevice(id: id, displayName: name, members: [
            SystemDevice.Member(protocolType: MediaSharingProtocol("org.mediaroute.test", displayName: "Test"), device: member, state: .idle),
        ])
    }

    static let tv = device("tv", "Den TV", .tv)
    static let speaker = device("speaker", "Kitchen Speaker", .speaker)
    static let film = PlaybackContent(isVideo: true, isLongForm: true)
    static let song = PlaybackContent(isVideo: false, isLongForm: false)

    @Test func withoutHistoryLongFormVideoGoesToAReachableTVAndTheRestPlaysLocally() {
        let history = RouteSuggestionHistory()
        #expect(history.suggestion(for: Self.film, application: "app", hour: 20, available: [Self.speaker, Self.tv])
            == .external(deviceID: "tv", displayName: "Den TV"))
        #expect(history.suggestion(for: Self.film, application: "app", hour: 20, available: [Self.speaker]) == .local)
        #expect(history.suggestion(for: Self.song, application: "app", hour: 20, available: [Self.tv]) == .local)
    }

    @Test func historyBuildsASuggestionAndAGoneDeviceIsNeverSuggested() {
        var history = RouteSuggestionHistory()
        for _ in 0..<3 {
            history.record(.init(application: "music", content: Self.song, hour: 8, deviceID: "speaker", displayName: "Kitchen Speaker"))
        }
        #expect(history.suggestion(for: Self.song, application: "music", hour: 8, available: [Self.tv, Self.speaker])
            == .external(deviceID: "speaker", displayName: "Kitchen Speaker"))
        // The speaker is gone: never suggested.
        #expect(history.suggestion(for: Self.song, application: "music", hour: 8, available: [Self.tv]) == .local)
    }

    @Test func timeOfDayAndContentKindChangeTheRanking() {
        var history = RouteSuggestionHistory()
        // Mornings: news audio on the speaker. Evenings: films on the TV.
        for _ in 0..<3 {
            history.record(.init(application: "app", content: Self.song, hour: 7, deviceID: "speaker", displayName: "Kitchen Speaker"))
            history.record(.init(application: "app", content: Self.film, hour: 21, deviceID: "tv", displayName: "Den TV"))
        }
        let both = [Self.tv, Self.speaker]
        #expect(history.suggestion(for: Self.song, application: "app", hour: 7, available: both) == .external(deviceID: "speaker", displayName: "Kitchen Speaker"))
        #expect(history.suggestion(for: Self.film, application: "app", hour: 21, available: both) == .external(deviceID: "tv", displayName: "Den TV"))
        // Same hour, other content kind: the kind wins over the hour it was learned at.
        #expect(history.suggestion(for: Self.film, application: "app", hour: 7, available: both) == .external(deviceID: "tv", displayName: "Den TV"))
        // Same content, other hour: the hour tips it.
        let audioAtNight = PlaybackContent(isVideo: false, isLongForm: true)
        #expect(history.suggestion(for: audioAtNight, application: "app", hour: 21, available: both) == .external(deviceID: "tv", displayName: "Den TV"))
        #expect(history.suggestion(for: audioAtNight, application: "app", hour: 7, available: both) == .external(deviceID: "speaker", displayName: "Kitchen Speaker"))
    }

    @Test func theHistoryIsBounded() {
        var history = RouteSuggestionHistory()
        for index in 0..<(RouteSuggestionHistory.capacity + 50) {
            history.record(.init(application: "a\(index)", content: Self.song, hour: index % 24, deviceID: nil, displayName: nil))
        }
        #expect(history.picks.count == RouteSuggestionHistory.capacity)
        #expect(history.picks.first?.application == "a50")
    }

    @Test func aCorruptOrForeignStateFileIsIgnoredAndRewritten() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("suggest-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/route-suggestions.json"
        for junk in ["{not json", #"{"format": "someone.else", "picks": []}"#, String(repeating: "x", count: 300_000),
                     #"{"format": "mediaroute.route-suggestions.v1", "picks": [{"application": "a", "content": {"isVideo": true, "isLongForm": true}, "hour": 99}]}"#] {
            try junk.write(toFile: path, atomically: true, encoding: .utf8)
            let store = RouteSuggestionStore(path: path)
            #expect(await store.history.picks.isEmpty)
            await store.record(.init(application: "app", content: Self.film, hour: 20, deviceID: "tv", displayName: "Den TV"))
            // Rewritten: a new store reads what was saved.
            #expect(await RouteSuggestionStore(path: path).history.picks.map(\.deviceID) == ["tv"])
        }
    }
}

/// Answers the picker with a scripted choice and records what it was shown.
final class ScriptedPresenter: RouteSelectionPresenter {
    let shown = Locked<[(entries: [String], suggested: String?)]>([])
    let answer: @Sendable ([RoutePickerEntry]) -> RouteChoice

    init(_ answer: @escaping @Sendable ([RoutePickerEntry]) -> RouteChoice) { self.answer = answer }

    func chooseRoute(from entries: [RoutePickerEntry], suggested: RoutePickerEntry?) async -> RouteChoice {
        shown.withLock { $0.append((entries.map(\.displayName), suggested?.displayName)) }
        return answer(entries)
    }
}

@Suite(.timeLimit(.minutes(1))) struct PrepareRouteSelectionTests {
    @Test func longFormVideoOpensThePickerWithTheTVFirstAndNothingConnectsWithoutAChoice() async throws {
        let rig = try await LoopbackRig(devices: [LoopbackRig.speaker, LoopbackDeviceSpec(name: "tv", displayName: "Den TV", kind: .tv)])
        let controller = await SystemRouteController(system: rig.system, applicationIdentifier: "org.example.films")
        let store = RouteSuggestionStore(path: nil)
        let film = PlaybackContent(isVideo: true, isLongForm: true)
        let cancelling = ScriptedPresenter { _ in .cancelled }
        let cancelled = try await controller.prepareRouteSelectionForPlayback(
            content: film, suggestions: store, presenter: cancelling, discoveryTime: .milliseconds(200), hour: 21)
        guard case .cancelled = cancelled else { Issue.record("expected cancelled"); return }
        #expect(cancelling.shown.value.first?.suggested == "Den TV")
        #expect(cancelling.shown.value.first?.entries.first == "Den TV")
        #expect(controller.routes.isEmpty, "nothing connects without the person's choice")
        #expect(await store.history.picks.isEmpty)

        // The person picks the TV: it is activated and remembered.
        let picking = ScriptedPresenter { entries in .device(entries.first { $0.displayName == "Den TV" }!) }
        let chosen = try await controller.prepareRouteSelectionForPlayback(
            content: film, suggestions: store, presenter: picking, discoveryTime: .milliseconds(200), hour: 21)
        guard case .external(let route) = chosen else { Issue.record("expected a route"); return }
        #expect(route.routeDisplayName == "Den TV")
        #expect(await store.history.picks.map(\.displayName) == ["Den TV"])
        await controller.deactivate(route)

        // Opted into automatic selection for long-form content: no picker, the suggestion connects.
        let untouched = ScriptedPresenter { _ in .cancelled }
        let automatic = try await controller.prepareRouteSelectionForPlayback(
            content: film, suggestions: store, presenter: untouched, automaticallySelectsLongFormRoute: true,
            discoveryTime: .milliseconds(200), hour: 21)
        guard case .external(let again) = automatic else { Issue.record("expected a route"); return }
        #expect(again.routeDisplayName == "Den TV")
        #expect(untouched.shown.value.isEmpty)
        await rig.system.shutdown()
    }
}
