import Foundation
import LoopbackExtension
import LoopbackTransport
import MediaDevice
import MediaRouteTestSupport
import NowPlaying
import NowPlayingRouting
import RouteSystem
import Testing
import RoutingModel

@Suite(.timeLimit(.minutes(1)))
struct RoutedSessionPublisherTests {
    let url = URL(string: "http://media.example/movie.mp4")!

    func activeTV() async throws -> (LoopbackRig, ActiveRoute, NowPlayingCenter, RoutedSessionPublisher) {
        let rig = try await LoopbackRig()
        await rig.system.setPairingAgent(ScriptedPairingAgent([.code("1234")]))
        await rig.discover(expecting: 2)
        let route = try await rig.system.activate(deviceID: "Living Room TV")
        let center = NowPlayingCenter()
        let publisher = RoutedSessionPublisher(system: rig.system, center: center, clock: rig.clock)
        try await publisher.start()
        return (rig, route, center, publisher)
    }

    @Test func aURLSessionAppearsInNowPlayingWithNoExtraCode() async throws {
        let (rig, route, center, _) = try await activeTV()
        let control = try await rig.system.startSession(on: route.session, identifier: nil, url: url)
        let id = route.session.id.uuidString
        #expect(await eventually { await center.primarySessionID == id })
        let info = try #require(await center.session(id))
        #expect(info.topic == RoutedSessionPublisher.topic)
        #expect(info.content?.id == url.absoluteString)
        #expect(info.content?.duration == .finite(100))  // the loopback TV's media is 100 s
        #expect(info.playback?.state.isPlaying == true)
        #expect(info.devices.map(\.name) == ["Living Room TV"])
        #expect(info.isEnabled(.seekToPosition))
        #expect(!info.isEnabled(.nextTrack))

        // Remote commands drive the device through the control.
        #expect(await center.perform(.pause) == .success)
        #expect(await eventually { control.snapshot.state == .paused })
        #expect(await eventually { await center.session(id)?.playback?.state == .paused })
        #expect(await center.perform(.seekToPosition(42)) == .success)
        #expect(await eventually { abs(control.snapshot.position - 42) < 0.01 })
        #expect(await eventually { abs((await center.session(id)?.playback?.elapsedTime ?? 0) - 42) < 0.01 })
        #expect(await center.perform(.togglePlayPause) == .success)
        #expect(await eventually { control.snapshot.state == .playing })
        let device = try #require(info.devices.first)
        #expect(await center.setVolume(0.3, device: device.id) == .success)
        #expect(await eventually { (try? await rig.system.volume(on: route.session))?.volume == 0.3 })

        // Routed sessions are the box's own: no push starts or updates them.
        #expect(await center.pushToStartToken(topic: RoutedSessionPublisher.topic) == nil)
        do {
            _ = try await center.handlePush(body: Array(#"{"aps": {"event": "end", "timestamp": 1, "attributes": {"id": "\#(id)"}}}"#.utf8),
                                            bearerToken: String(repeating: "0", count: 64), topic: RoutedSessionPublisher.topic)
            Issue.record("a push reached a routed session")
        } catch {
            #expect(error.code == .badTopic)
        }

        // Stopping the session removes it from Now Playing.
        await rig.system.stopSession(on: route.session)
        #expect(await eventually { await center.session(id) == nil })
        #expect(await center.primarySessionID == nil)
    }

    @Test func aLostDeviceEndsItsNowPlayingSession() async throws {
        let (rig, route, center, _) = try await activeTV()
        _ = try await rig.system.startSession(on: route.session, identifier: nil, url: url)
        let id = route.session.id.uuidString
        #expect(await eventually { await center.session(id) != nil })
        await rig.transport.removeDevice(named: "tv")
        #expect(await eventually { await center.session(id) == nil })
    }

    @Test func sessionsAlreadyPlayingArePublishedAtStart() async throws {
        let rig = try await LoopbackRig()
        await rig.system.setPairingAgent(ScriptedPairingAgent([.code("1234")]))
        await rig.discover(expecting: 2)
        let route = try await rig.system.activate(deviceID: "Living Room TV")
        _ = try await rig.system.startSession(on: route.session, identifier: nil, url: url)
        let center = NowPlayingCenter()
        let publisher = RoutedSessionPublisher(system: rig.system, center: center, clock: rig.clock)
        try await publisher.start()
        #expect(await center.session(route.session.id.uuidString) != nil)
        await publisher.stop()
        #expect(await center.sessions.isEmpty)
    }
}
