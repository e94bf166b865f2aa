import Foundation
import LoopbackExtension
import LoopbackTransport
import MediaRouteTestSupport
import RouteSystem
import SystemRouting
import Testing
import RoutingModel
import MediaDevice

/// Records route events an app observer receives.
final class RecordingObserver: SystemRouteControllerObserver {
    let events = Locked<[(SystemRouteEventReason, String, MediaDeviceError.Code?)]>([])

    func systemRouteController(_ controller: SystemRouteController, handle event: SystemRouteEvent) async -> Bool {
        events.withLock { $0.append((event.reason, event.route.routeDisplayName, event.error?.code)) }
        return true
    }

    var summary: [String] {
        events.value.map { "\($0.0 == .activate ? "activate" : "deactivate"):\($0.1)\($0.2.map { ":\($0)" } ?? "")" }
    }
}

final class CollectingDelegate: SystemRouteDataDelegate {
    let received = Locked<[String]>([])
    func dataChannel(_ channel: SystemRouteDataChannel, didReceive data: Data) {
        received.withLock { $0.append(String(decoding: data, as: UTF8.self)) }
    }
}

func makeController() async throws -> (LoopbackRig, SystemRouteController) {
    let rig = try await LoopbackRig()
    let controller = await SystemRouteController(system: rig.system, applicationIdentifier: "org.example.app")
    await controller.setPairingAgent(ScriptedPairingAgent([.code("1234")]))
    return (rig, controller)
}

@Suite(.timeLimit(.minutes(1))) struct SystemRouteControllerTests {
    @Test func observersAreAddedOnceAndSeeActivateThenDeactivate() async throws {
        let (rig, controller) = try await makeController()
        let observer = RecordingObserver()
        #expect(controller.addObserver(observer))
        #expect(!controller.addObserver(observer), "the same observer twice")
        await rig.discover(expecting: 2)

        let route = try await controller.activate(deviceNamed: "Living Room TV")
        #expect(route.protocolType == LoopbackExtension.defaultProtocol)
        #expect(route.routeDisplayName == "Living Room TV")
        #expect(route.routeSymbolName == "tv")
        #expect(controller.routes == [route])
        await controller.deactivate(route)
        #expect(await eventually { observer.summary == ["activate:Living Room TV", "deactivate:Living Room TV"] })
        #expect(!route.isActive)
        #expect(controller.routes.isEmpty)

        #expect(controller.removeObserver(observer))
        #expect(!controller.removeObserver(observer))
        _ = try await controller.activate(deviceNamed: "Kitchen Speaker")
        try await Task.sleep(for: .milliseconds(20))
        #expect(observer.summary.count == 2, "a removed observer hears nothing")
    }

    /// A person's words find a route by the rule that finds devices: the device's id, or its
    /// name with case and spacing ignored (the CLI used two other rules before).
    @Test func aRouteIsFoundByTheOneNameRule() async throws {
        let (rig, controller) = try await makeController()
        await rig.discover(expecting: 2)
        let route = try await controller.activate(deviceNamed: "Living Room TV")
        #expect(controller.routes.named("living  room tv") === route)
        #expect(controller.routes.named(route.device.id) === route)
        #expect(controller.routes.named("Living Room") == nil)
        await controller.deactivate(route)
        // The controller learns of the end from the system's events.
        #expect(await eventually { controller.routes.named("Living Room TV") == nil })
        await rig.system.shutdown()
    }

    @Test func aLostDeviceDeactivatesItsRouteWithTheReasonAndEndsItsSession() async throws {
        let (rig, controller) = try await makeController()
        let observer = RecordingObserver()
        controller.addObserver(observer)
        await rig.discover(expecting: 2)
        let route = try await controller.activate(deviceNamed: "Living Room TV")
        let session = SystemRouteSession(url: URL(string: "http://media.example/a.mp4")!, mode: .player)
        #expect(route.addSession(session))
        _ = try await session.start()
        let ended = Task { await session.waitUntilEnded() }
        await rig.transport.removeDevice(named: "tv")
        #expect(await eventually { observer.summary.last?.hasPrefix("deactivate:Living Room TV:") == true })
        #expect(await ended.value != nil)
        #expect(session.mediaSession == nil)
        #expect(!route.addSession(SystemRouteSession(url: URL(string: "http://x/y")!, mode: .player)), "route is gone")
    }
}

@Suite(.timeLimit(.minutes(1))) struct SystemRouteSessionTests {
    let url = URL(string: "http://media.example/movie.mp4")!

    @Test func sessionsAreAddedOneAtATimeAndMustBeAddedToStart() async throws {
        let (rig, controller) = try await makeController()
        await rig.discover(expecting: 2)
        let route = try await controller.activate(deviceNamed: "Living Room TV")
        let loose = SystemRouteSession(url: url, mode: .player)
        await #expect(throws: MediaDeviceError.self) { _ = try await loose.start() }

        let first = SystemRouteSession(url: url, mode: .application)
        let second = SystemRouteSession(url: url, mode: .player)
        #expect(route.addSession(first))
        #expect(!route.addSession(second))
        #expect(!route.removeSession(second))
        let media = try await first.start()
        #expect(media.playbackControl.isPlaying)
        await first.stop()
        #expect(route.removeSession(first))
        #expect(route.addSession(second))
    }

    @Test func theSessionDataChannelIsNilInPlayerModeAndRoundTripsInApplicationMode() async throws {
        let (rig, controller) = try await makeController()
        await rig.discover(expecting: 2)
        let route = try await controller.activate(deviceNamed: "Living Room TV")

        let player = SystemRouteSession(url: url, mode: .player)
        route.addSession(player)
        let playerMedia = try await player.start()
        #expect(playerMedia.dataChannel == nil)
        await player.stop()
        route.removeSession(player)

        let app = SystemRouteSession(url: url, mode: .application)
        route.addSession(app)
        let media = try await app.start()
        let channel = try #require(media.dataChannel)
        let delegate = CollectingDelegate()
        channel.dataDelegate = delegate
        let messages = channel.messages()
        try await channel.send(Data("hi".utf8))
        var iterator = messages.makeAsyncIterator()
        let reply = await iterator.next()
        #expect(reply.map { String(decoding: $0, as: UTF8.self) } == "ack:hi")
        #expect(delegate.received.value == ["ack:hi"])

        await app.stop()
        await #expect(throws: MediaDeviceError.self) { try await channel.send(Data("late".utf8)) }
    }

    @Test func theRouteDataChannelTalksToTheExtension() async throws {
        let (rig, controller) = try await makeController()
        await rig.discover(expecting: 2)
        let route = try await controller.activate(deviceNamed: "Kitchen Speaker")
        let delegate = CollectingDelegate()
        route.routeDataChannel.dataDelegate = delegate
        try await route.routeDataChannel.send(Data("status?".utf8))
        #expect(await eventually { delegate.received.value == ["extension:status?"] })
        await controller.deactivate(route)
        await #expect(throws: MediaDeviceError.self) { try await route.routeDataChannel.send(Data([0])) }
    }

    @Test func routeVolumeFollowsTheDeviceMode() async throws {
        let (rig, controller) = try await makeController()
        await rig.discover(expecting: 2)
        let tv = try await controller.activate(deviceNamed: "Living Room TV")
        let changes = tv.volumeChanges()
        try await tv.setVolume(0.25)
        var iterator = changes.makeAsyncIterator()
        #expect(await iterator.next()?.volume == 0.25)
        await rig.transport.changeVolumeOnDevice(named: "tv", to: 0.5)
        #expect(await iterator.next()?.volume == 0.5)

        let speaker = try await controller.activate(deviceNamed: "Kitchen Speaker")
        await #expect(throws: MediaDeviceError.self) { try await speaker.setVolume(0.5) }
        try await speaker.changeVolume(by: -8)
        #expect(await eventually { (try? await speaker.volume().volume) == 0 })
    }
}

@Suite(.timeLimit(.minutes(1))) struct RoutePickerTests {
    @Test func thePickerDrivesDiscoveryAndListsTVsFirstWhenAsked() async throws {
        let rig = try await LoopbackRig(devices: [
            LoopbackRig.speaker, LoopbackDeviceSpec(name: "den", displayName: "Den TV", kind: .tv),
            LoopbackDeviceSpec(name: "bath", displayName: "Bath Speaker", kind: .speaker),
        ])
        let controller = await SystemRouteController(system: rig.system)
        let picker = controller.makePicker()
        #expect(await !rig.system.isDiscovering)
        await picker.open()
        #expect(await rig.system.isDiscovering)
        #expect(await eventually { await picker.entries().count == 3 })
        #expect(await picker.entries().map(\.displayName) == ["Kitchen Speaker", "Den TV", "Bath Speaker"])
        picker.prioritizesVideoDevices = true
        let sorted = await picker.entries()
        #expect(sorted.map(\.displayName) == ["Den TV", "Kitchen Speaker", "Bath Speaker"])
        #expect(sorted[0].protocolDisplayNames == ["Loopback"])
        #expect(sorted[0].symbolName == "tv")

        let route = try await picker.pick(sorted[1])
        #expect(route.routeDisplayName == "Kitchen Speaker")
        #expect(await eventually { await picker.entries().first { $0.displayName == "Kitchen Speaker" }?.state == .active })
        await picker.close()
        #expect(await !rig.system.isDiscovering)
    }

    @Test func pickerUpdatesFollowTheDeviceList() async throws {
        let rig = try await LoopbackRig(devices: [LoopbackRig.speaker])
        let controller = await SystemRouteController(system: rig.system)
        let picker = controller.makePicker()
        let updates = await picker.updates()
        await picker.open()
        var seen: [[String]] = []
        for await entries in updates {
            seen.append(entries.map(\.displayName))
            if entries.count == 2 { break }
            if entries.count == 1 { await rig.transport.addDevice(LoopbackRig.tv) }
        }
        #expect(seen.first == [])
        #expect(seen.last == ["Kitchen Speaker", "Living Room TV"])
        await picker.close()
    }

    /// Picking goes by the entry's typed key: of two devices with the same name, the
    /// one picked is the one activated, with no lookup by name on the way.
    @Test func pickingActivatesTheEntrysKeyNotANameMatch() async throws {
        let rig = try await LoopbackRig(devices: [
            LoopbackDeviceSpec(name: "twin-a", displayName: "Twin", kind: .speaker),
            LoopbackDeviceSpec(name: "twin-b", displayName: "Twin", kind: .speaker),
        ])
        let controller = await SystemRouteController(system: rig.system)
        let picker = controller.makePicker()
        await picker.open()
        #expect(await eventually { await picker.entries().count == 2 })
        let entries = await picker.entries()
        #expect(Set(entries.map(\.key.deviceID)) == ["twin-a", "twin-b"])
        let second = try #require(entries.first { $0.key.deviceID == "twin-b" })
        let route = try await picker.pick(second)
        #expect(DeviceKey(protocolID: route.protocolType.identifier, deviceID: route.device.id) == second.key)
        await picker.close()
    }

    /// The picker applies each event's device to its list instead of re-reading it: after
    /// found, changed (activated) and lost devices, its list is the system's, entry for entry.
    @Test func pickerUpdatesApplyEventsToTheSameListTheSystemHas() async throws {
        let rig = try await LoopbackRig(devices: [LoopbackRig.speaker, LoopbackRig.tv])
        let controller = await SystemRouteController(system: rig.system)
        let picker = controller.makePicker()
        let updates = await picker.updates()
        await picker.open()
        var iterator = updates.makeAsyncIterator()
        var latest: [RoutePickerEntry] = []
        func next(until done: ([RoutePickerEntry]) -> Bool) async {
            while let entries = await iterator.next() {
                latest = entries
                if done(entries) { return }
            }
        }
        await next { $0.count == 2 }
        _ = try await picker.pick(try #require(latest.named("kitchen  SPEAKER")))
        await next { $0.named("Kitchen Speaker")?.state == .active }
        #expect(latest == (await picker.entries()))
        await rig.transport.removeDevice(named: "tv")
        await next { $0.count == 1 }
        #expect(latest == (await picker.entries()))
        #expect(latest.map(\.displayName) == ["Kitchen Speaker"])
        await picker.close()
    }
}

/// A device with a player and nothing else: no application, no route-channel receiver
/// (what a UPnP renderer is to the data channels).
actor PlayerOnlyExtension: MediaDeviceExtension {
    nonisolated let protocolType = MediaSharingProtocol("org.mediaroute.test.player", displayName: "Player")
    let routingManager: MediaDeviceRoutingManager
    let device = MediaOutputDevice(id: "p", displayName: "Hall TV", capabilities: [.urlPlayback], deviceType: .tv)!

    init(routingManager: MediaDeviceRoutingManager) { self.routingManager = routingManager }

    func startDeviceDiscovery() { routingManager.foundDevice(device) }
    func stopDeviceDiscovery() {}
    func activateDevice(_ device: MediaOutputDevice, session: MediaOutputSession, for deviceFeatures: MediaOutputDevice.Capabilities) {
        routingManager.activatedDevice(device, session: session)
    }
    func connectUsingPairingCode(_ pairingCode: String?, to device: MediaOutputDevice, session: MediaOutputSession) {}
    func deactivateDevice(_ device: MediaOutputDevice, session: MediaOutputSession) {}
    func setVolume(_ volume: Float, for device: MediaOutputDevice) {}
    func volume(for device: MediaOutputDevice) -> Float { 0 }
    func changeVolume(by increments: Int, for device: MediaOutputDevice) {}
    func muteDevice(_ device: MediaOutputDevice) {}
    func isDeviceMuted(_ device: MediaOutputDevice) -> Bool { false }
    func startSession(_ session: MediaOutputSession, identifier: String?, url: URL) {
        // The renderer's own player: no application, whatever the app asked for.
        routingManager.started(application: nil, playbackControl: PlaybackControl(), session: session)
    }
    func stopSession(_ session: MediaOutputSession) {}
    func sendData(_ data: Data, toApplication applicationIdentifier: String, session: MediaOutputSession) {}
}

@Suite(.timeLimit(.minutes(1))) struct DataChannelTruthTests {
    @Test func noChannelWithoutSomethingAtTheOtherEnd() async throws {
        let system = RouteSystem()
        try await system.load { PlayerOnlyExtension(routingManager: $0) }
        let controller = await SystemRouteController(system: system)
        let picker = controller.makePicker()
        await picker.open()
        #expect(await eventually { await picker.entries().count == 1 })
        let route = try await picker.pick(try #require(await picker.entries().first))
        // Application mode on a device that runs no application: no session channel, as in player mode.
        let session = SystemRouteSession(url: URL(string: "http://m/a.mp4")!, mode: .application)
        #expect(route.addSession(session))
        let media = try await session.start()
        #expect(media.dataChannel == nil)
        // The route channel to an extension that takes no data is a typed error, not a silent success.
        await #expect { try await system.sendRouteData(Data("x".utf8), fromApplication: "app", on: route.session) } throws: {
            ($0 as? MediaDeviceError)?.code == .unsupported
        }
        await picker.close()
        await system.shutdown()
    }
}

@Suite(.timeLimit(.minutes(1))) struct SessionTruthTests {
    @Test func theAppsDescriptionReachesThePlaybackStateAndStopEndsTheSession() async throws {
        let rig = try await LoopbackRig()
        await rig.system.setPairingAgent(ScriptedPairingAgent([.code("1234")]))
        let controller = await SystemRouteController(system: rig.system)
        let device = try #require(await rig.discover(expecting: 2).first { $0.displayName == "Living Room TV" })
        let route = try await controller.activate(deviceNamed: device.id)
        let metadata = PlaybackMetadata(
            title: "The Film", artist: "A Director", album: "Series", artworkURL: URL(string: "http://m/poster.jpg"), duration: 5400)
        let session = SystemRouteSession(url: URL(string: "http://m/film_final_v2.mp4")!, mode: .player, metadata: metadata)
        #expect(route.addSession(session))
        let media = try await session.start()
        let shown = media.playbackControl.metadata
        #expect(shown.title == "The Film", "not the URL's file name")
        #expect(shown.artist == "A Director" && shown.album == "Series")
        #expect(shown.artworkURL == URL(string: "http://m/poster.jpg"))
        // stop() on the control ends the session (as Session1.Stop does through the daemon).
        media.playbackControl.stop()
        #expect(await eventually { await rig.system.playbackControl(for: route.session) == nil })
        #expect(await rig.recorder.first { event -> Bool? in
            if case .sessionEnded = event { return true }
            return nil
        } == true)
        await rig.system.shutdown()
    }
}
