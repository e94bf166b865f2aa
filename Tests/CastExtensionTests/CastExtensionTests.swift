import CastChannel
import CastExtension
import Foundation
import LANTransport
import MediaDevice
import MediaRouteTestSupport
import RouteSystem
import RoutingModel
import Testing
import Transport

/// The Cast test receiver's endpoint, as mDNS would give it (``FixedEndpointsTransport`` with TLS announces it).
enum FixedCastTransport {
    static func endpoint(for peer: CastReceiverPeer, model: String = "Chromecast", capabilities: Int = 4101) -> Endpoint {
        Endpoint(
            id: "\(model)-\(peer.id)._googlecast._tcp.local", transport: "lan", address: .ip(host: peer.address, port: UInt16(peer.port), interface: "lo"),
            attributes: ["id": peer.id, "fn": peer.name, "md": model, "ca": String(capabilities), "serviceType": "_googlecast._tcp"],
            services: ["_googlecast._tcp"],
            // Loopback: the receiver fetches our files from the address it is reached at.
            facts: EndpointFacts(interfaceAddress: peer.address))
    }
}

/// What the tests hold of a loaded extension.
final class ExtensionHandle: Sendable {
    let value = Locked<CastExtension?>(nil)
    var cast: CastExtension { value.value! }
}

struct CastRig {
    let peer: CastReceiverPeer
    let system: RouteSystem
    let recorder: EventRecorder
    let handle: ExtensionHandle
    let pinsPath: String

    static let fast = CastExtension.Configuration(
        heartbeatInterval: .milliseconds(300), heartbeatTimeout: .milliseconds(900), initialReconnectDelay: .milliseconds(200),
        maximumReconnectDelay: .seconds(2), requestTimeout: .seconds(5))

    static func make(peer: CastReceiverPeer? = nil, configuration: CastExtension.Configuration = fast, pinsPath: String? = nil) async throws -> CastRig {
        let peer = try peer ?? CastReceiverPeer()
        var configuration = configuration
        let pins = pinsPath ?? TestScratch.path("cast-pins", suffix: ".json")
        configuration.certificatesPath = pins
        configuration.applicationNamespaces = ["MRTEST01": "urn:x-cast:org.mediaroute.test"]
        let transport = FixedEndpointsTransport(endpoints: [FixedCastTransport.endpoint(for: peer)], tls: true)
        let system = RouteSystem()
        let recorder = await EventRecorder(system)
        let handle = ExtensionHandle()
        let loaded = configuration
        try await system.load { manager in
            let cast = CastExtension(transport: transport, routingManager: manager, configuration: loaded)
            handle.value.withLock { $0 = cast }
            return cast
        }
        await system.beginDiscovery(client: "test")
        return CastRig(peer: peer, system: system, recorder: recorder, handle: handle, pinsPath: pins)
    }

    func device() async throws -> SystemDevice {
        #expect(await eventually(timeout: .seconds(5)) { await system.devicesList.contains { $0.displayName == peer.name } })
        return try #require(await system.devicesList.first { $0.displayName == peer.name })
    }

    func activate() async throws -> ActiveRoute {
        try await system.activate(deviceID: try await device().id)
    }

    /// Activates the receiver and plays a film on it.
    func playing() async throws -> (ActiveRoute, any InterfaceControllable) {
        let route = try await activate()
        let control = try await system.startSession(on: route.session, identifier: nil, url: URL(string: "http://127.0.0.1:9/film.mp4")!)
        #expect(await eventually { control.playbackState == .playing })
        return (route, control)
    }

    /// The receiver stops taking connections and drops ours: the session shows buffering.
    func dropAndRefuse(_ control: any InterfaceControllable) async throws {
        try await peer.command("refuse")
        try await peer.command("reset")
        #expect(await eventually(timeout: .seconds(5)) { control.playbackState == .buffering })
    }

    /// Why the route ended, once it has.
    func endReason(of route: ActiveRoute) async -> MediaDeviceError? {
        await recorder.first(timeout: .seconds(10)) { event -> MediaDeviceError? in
            if case .routeDeactivated(let ended, let reason?) = event, ended.session == route.session { return reason }
            return nil
        }
    }
}

@Suite(.timeLimit(.minutes(2)), .enabled(if: CastReceiverPeer.available), .serialized) struct CastExtensionTests {
    @Test func aReceiversTXTMakesATelevisionWithItsUDN() throws {
        let endpoint = Endpoint(
            id: "Chromecast-abc._googlecast._tcp.local", transport: "lan", address: .ip(host: "10.0.0.5", port: 8009, interface: "eth0"),
            attributes: ["id": "4c4c4544004c4b10805ab8c04f4e4a31", "fn": "Den", "md": "Chromecast", "ca": "4101"], services: ["_googlecast._tcp"])
        let tv = try #require(CastExtension.device(for: endpoint))
        #expect(tv.deviceType == .tv && tv.displayName == "Den" && tv.capabilities == [.urlPlayback, .realtimeAudioStreaming, .realtimeVideoStreaming])
        var silent = endpoint
        silent.attributes["ca"] = "1"
        #expect(
            CastExtension.device(for: silent)?.capabilities == [.urlPlayback, .realtimeVideoStreaming],
            "a receiver with a screen and no sound out takes video and no audio stream")
        var speaker = endpoint
        speaker.attributes["ca"] = "4"
        #expect(CastExtension.device(for: speaker)?.capabilities == [.urlPlayback, .realtimeAudioStreaming], "no screen: no video")
        #expect(tv.requiredNetworkEndpoints.first?.allIdentifiers.contains(.udn("uuid:4c4c4544-004c-4b10-805a-b8c04f4e4a31")) == true)
        var group = endpoint
        group.attributes = ["id": "ffee", "fn": "Downstairs", "md": "Google Cast Group", "ca": "2084"]
        #expect(CastExtension.device(for: group)?.deviceType == .speakerGroup)
        group.attributes["md"] = "Google Nest Mini"
        group.attributes["ca"] = "2052"
        #expect(CastExtension.device(for: group)?.deviceType == .speaker)
        group.attributes["id"] = nil
        #expect(CastExtension.device(for: group) == nil, "no id, no device")
    }

    @Test func aURLPlaysWithItsTitleAndIsControlledBothWays() async throws {
        let rig = try await CastRig.make()
        let route = try await rig.activate()
        #expect(rig.peer.received(CastNamespace.connection, type: "CONNECT").count >= 1)
        let url = URL(string: "http://127.0.0.1:9/song.mp3")!
        let control = try await rig.system.startSession(
            on: route.session, identifier: nil, url: url,
            metadata: PlaybackMetadata(title: "Song", artist: "Band", album: "Record", artworkURL: URL(string: "http://127.0.0.1:9/cover.jpg")))
        let load = try #require(rig.peer.received(CastNamespace.media, type: "LOAD").first)
        let media = try #require(load["media"] as? [String: Any])
        #expect(media["contentId"] as? String == url.absoluteString)
        #expect(media["contentType"] as? String == "audio/mpeg")
        let metadata = try #require(media["metadata"] as? [String: Any])
        #expect(metadata["title"] as? String == "Song" && metadata["artist"] as? String == "Band" && metadata["albumName"] as? String == "Record")
        #expect(rig.peer.received(CastNamespace.receiver, type: "LAUNCH").first?["appId"] as? String == "CC1AD845")
        #expect(await eventually { control.playbackState == .playing })
        #expect(control.metadata.duration == 120, "the receiver's duration")

        control.pause()
        #expect(await eventually { rig.peer.received(CastNamespace.media, type: "PAUSE").count == 1 })
        #expect(await eventually { (try? await rig.peer.state())?["media"].flatMap { ($0 as? [String: Any])?["state"] as? String } == "PAUSED" })
        control.seek(to: 42)
        #expect(await eventually { rig.peer.received(CastNamespace.media, type: "SEEK").first?["currentTime"] as? Double == 42 })
        #expect(await eventually { abs(control.currentPlaybackPosition - 42) < 0.5 })
        control.play()
        #expect(await eventually { control.playbackState == .playing && rig.peer.received(CastNamespace.media, type: "PLAY").count == 1 })

        // On the device (a phone, the remote): the app hears it.
        try await rig.peer.command("pause")
        #expect(await eventually { control.playbackState == .paused })
        try await rig.peer.command("play")
        #expect(await eventually { control.playbackState == .playing })

        // Volume both ways.
        try await rig.system.setVolume(0.3, on: route.session)
        #expect(await eventually { abs((((try? await rig.peer.state())?["volume"] as? [String: Any])?["level"] as? Double ?? 0) - 0.3) < 0.001 })
        try await rig.peer.command("volume 0.7")
        let changed = await rig.recorder.first(timeout: .seconds(5)) { event -> Float? in
            if case .volumeChanged(let changed, let volume, _) = event, changed.session == route.session, abs(volume - 0.7) < 0.001 { return volume }
            return nil
        }
        #expect(changed != nil, "the device's own volume change is reported")
        #expect(await eventually { abs(control.volume - 0.7) < 0.001 })
        try await rig.peer.command("mute")
        #expect(await eventually { control.isMuted })

        // Queue the next item.
        try await rig.handle.cast.enqueue(URL(string: "http://127.0.0.1:9/next.mp3")!, metadata: PlaybackMetadata(title: "Next"), session: route.session)
        let inserted = try #require(rig.peer.received(CastNamespace.media, type: "QUEUE_INSERT").first)
        #expect(((inserted["items"] as? [[String: Any]])?.first?["media"] as? [String: Any])?["contentId"] as? String == "http://127.0.0.1:9/next.mp3")

        // The end of the media ends the session's playback.
        try await rig.peer.command("finish")
        #expect(await eventually { control.playbackState == .ended })

        await rig.system.deactivate(route.session)
        #expect(await eventually { rig.peer.received(CastNamespace.receiver, type: "STOP").count >= 1 }, "what the box started, it stops")
        #expect(await eventually { (try? await rig.peer.state())?["app"] is NSNull })
        #expect(await eventually { (try? await rig.peer.state())?["senders"] as? Int == 0 }, "the channel is closed")
        await rig.system.shutdown()
    }

    @Test func aLocalFileIsServedToTheReceiverOnlyWhileItsSessionLasts() async throws {
        let rig = try await CastRig.make()
        let route = try await rig.activate()
        let path = NSTemporaryDirectory() + "mr-cast-\(UUID().uuidString.prefix(8)) Holiday film.mp4"
        let content = Data((0..<5000).map { UInt8(65 + $0 % 26) })
        try content.write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }

        let control = try await rig.system.startSession(on: route.session, identifier: nil, url: URL(fileURLWithPath: path))
        let load = try #require(rig.peer.received(CastNamespace.media, type: "LOAD").first)
        let media = try #require(load["media"] as? [String: Any])
        let contentID = try #require(media["contentId"] as? String)
        #expect(contentID.hasPrefix("http://\(rig.peer.address):") && contentID.contains("/media/") && contentID.hasSuffix("%20Holiday%20film.mp4"), "\(contentID)")
        #expect(media["contentType"] as? String == "video/mp4")
        #expect((media["metadata"] as? [String: Any])?["title"] as? String == URL(fileURLWithPath: path).lastPathComponent, "the file's name when the app gave no title")
        #expect(await eventually { control.playbackState == .playing })
        #expect(await rig.handle.cast.servedFileCount == 1)

        // What the receiver fetches: the file, and a part of it when it seeks by bytes.
        let address = try #require(URL(string: contentID))
        let port = try #require(address.port)
        func get(_ range: String? = nil) async throws -> RawHTTP.Response {
            let request = "GET \(address.path(percentEncoded: true)) HTTP/1.1\r\nHost: x\r\n\(range.map { "Range: \($0)\r\n" } ?? "")Connection: close\r\n\r\n"
            return try #require(try await RawHTTP.exchange(port: port, Array(request.utf8)).first)
        }
        let whole = try await get()
        #expect(whole.status == 200 && whole.body.utf8.count == 5000 && Array(whole.body.utf8) == Array(content))
        let tail = try await get("bytes=4990-")
        #expect(tail.status == 206 && Array(tail.body.utf8) == Array(content.suffix(10)))

        // The session ends: the file is no longer served.
        await rig.system.stopSession(on: route.session)
        #expect(await eventually { await rig.handle.cast.servedFileCount == 0 })
        #expect(try await get().status == 404)

        // A file that is not there is refused before the receiver is asked.
        let loads = rig.peer.received(CastNamespace.media, type: "LOAD").count
        await #expect(throws: MediaDeviceError.self) {
            _ = try await rig.system.startSession(on: route.session, identifier: nil, url: URL(fileURLWithPath: path + ".missing"))
        }
        #expect(rig.peer.received(CastNamespace.media, type: "LOAD").count == loads)
        // Left active, the route outlived the test and reconnected to the stopped peer every
        // 2.5 s for the rest of the run.
        await rig.system.shutdown()
    }

    @Test func loadFailedIsATypedSessionFailureAndTheRouteStays() async throws {
        let rig = try await CastRig.make()
        let route = try await rig.activate()
        await #expect {
            _ = try await rig.system.startSession(on: route.session, identifier: nil, url: URL(string: "http://127.0.0.1:9/load-fail.mp4")!)
        } throws: { error in
            (error as? MediaDeviceError)?.code == .sessionFailed && "\(error)".contains("LOAD_FAILED")
        }
        await #expect {
            _ = try await rig.system.startSession(on: route.session, identifier: nil, url: URL(fileURLWithPath: "/tmp/film.mp4"))
        } throws: { error in
            (error as? MediaDeviceError)?.code == .invalidArgument
        }
        let control = try await rig.system.startSession(on: route.session, identifier: nil, url: URL(string: "http://127.0.0.1:9/film.mp4")!)
        #expect(await eventually { control.playbackState == .playing })
        await rig.system.shutdown()
    }

    @Test func anApplicationIsLaunchedWithItsDataChannelBothWays() async throws {
        let rig = try await CastRig.make()
        let route = try await rig.activate()
        _ = try await rig.system.startSession(on: route.session, identifier: "MRTEST01", url: URL(string: "http://127.0.0.1:9/game")!)
        #expect(rig.peer.received(CastNamespace.receiver, type: "LAUNCH").first?["appId"] as? String == "MRTEST01")
        try await rig.system.sendSessionData(Data("hello receiver".utf8), on: route.session)
        #expect(await eventually { rig.peer.texts(in: "urn:x-cast:org.mediaroute.test") == ["hello receiver"] })
        // The receiver app echoes, and speaks by itself.
        let echoed = await rig.recorder.first(timeout: .seconds(5)) { event -> String? in
            if case .sessionData(let received, let application, let data) = event, received.session == route.session, application == "MRTEST01" {
                return String(decoding: data, as: UTF8.self)
            }
            return nil
        }
        #expect(echoed == "echo:hello receiver")
        try await rig.peer.command("app-send from-the-tv")
        #expect(await eventually {
            rig.recorder.events.contains { event in
                if case .sessionData(_, _, let data) = event { return String(decoding: data, as: UTF8.self) == "from-the-tv" }
                return false
            }
        })
        await #expect(throws: MediaDeviceError.self) {
            _ = try await rig.system.startSession(on: route.session, identifier: "bad id!", url: URL(string: "http://127.0.0.1:9/x")!)
        }
        await rig.system.shutdown()
    }

    @Test func anUnknownApplicationIsALaunchError() async throws {
        let rig = try await CastRig.make()
        let route = try await rig.activate()
        await #expect {
            _ = try await rig.system.startSession(on: route.session, identifier: "NOSUCHAP", url: URL(string: "http://127.0.0.1:9/x")!)
        } throws: { error in
            (error as? MediaDeviceError)?.code == .sessionFailed && "\(error)".contains("NOT_FOUND")
        }
        await rig.system.shutdown()
    }

    @Test func theAppStoppedByAnotherSenderEndsTheRouteWithTheReason() async throws {
        let rig = try await CastRig.make()
        let (route, control) = try await rig.playing()
        try await rig.peer.command("stop-app")
        let reason = await rig.endReason(of: route)
        #expect(reason?.message.contains("stopped by another sender") == true, "\(String(describing: reason))")
        #expect(control.playbackState == .ended)
        await rig.system.shutdown()
    }

    @Test func aSilentReceiverIsReconnectedAndTheSessionResumed() async throws {
        let rig = try await CastRig.make()
        let (route, control) = try await rig.playing()
        try await rig.peer.command("mute-heartbeat")
        #expect(await eventually(timeout: .seconds(5)) { control.playbackState == .buffering }, "the app sees buffering while the channel is down")
        try await rig.peer.command("unmute-heartbeat")
        #expect(await eventually(timeout: .seconds(10)) { control.playbackState == .playing }, "resumed on the same app")
        #expect(rig.peer.received(CastNamespace.receiver, type: "LAUNCH").count == 1, "not launched again")
        #expect(rig.peer.received(CastNamespace.media, type: "GET_STATUS").count >= 1, "the media status was read again")
        #expect(await rig.system.activeRoutes.contains { $0.session == route.session }, "the route never ended")
        control.pause()
        #expect(await eventually { rig.peer.received(CastNamespace.media, type: "PAUSE").count == 1 }, "commands reach the app after the reconnect")
        await rig.system.shutdown()
    }

    @Test func aResetConnectionAndARefusingReceiverAreRetriedWithBackoff() async throws {
        let rig = try await CastRig.make()
        let (route, control) = try await rig.playing()
        try await rig.dropAndRefuse(control)
        // Attempts at 0.2, 0.4, 0.8, 1.6 s… (±20 %): a second and a half of refusals.
        try await Task.sleep(for: .milliseconds(1500))
        #expect(await rig.system.activeRoutes.contains { $0.session == route.session })
        try await rig.peer.command("accept")
        #expect(await eventually(timeout: .seconds(10)) { control.playbackState == .playing })
        #expect(rig.peer.events.filter { ($0["event"] as? String) == "connected" }.count == 2, "one new connection, not a storm")
        await rig.system.shutdown()
    }

    @Test func theAppStoppedWhileDisconnectedEndsTheRouteOnReconnect() async throws {
        let rig = try await CastRig.make()
        let (route, control) = try await rig.playing()
        try await rig.dropAndRefuse(control)
        try await rig.peer.command("stop-app")
        try await rig.peer.command("accept")
        let reason = await rig.endReason(of: route)
        #expect(reason?.message.contains("while the connection was down") == true, "\(String(describing: reason))")
        await rig.system.shutdown()
    }

    @Test func aChangedCertificateIsRefusedUntilThePersonConfirmsIt() async throws {
        let peer = try CastReceiverPeer()
        let first = try await CastRig.make(peer: peer)
        let route = try await first.activate()
        await first.system.deactivate(route.session)
        let pinned = try String(contentsOfFile: first.pinsPath, encoding: .utf8)
        #expect(pinned.contains("cast:\(peer.id)"), "pinned on first use: \(pinned)")
        await first.system.shutdown()

        let (certificate, key) = try CastReceiverPeer.makeCertificate(in: peer.directory, name: "replaced")
        try await peer.command("new-cert \(certificate) \(key)")
        // A box started again with the same state directory.
        let second = try await CastRig.make(peer: peer, pinsPath: first.pinsPath)
        let refusing = ScriptedPairingAgent([.cancel])
        await second.system.setPairingAgent(refusing)
        await #expect {
            _ = try await second.activate()
        } throws: { error in
            (error as? MediaDeviceError)?.code == .authorizationFailed && "\(error)".contains("certificate")
        }
        #expect(refusing.receivedRequests.count == 1)
        #expect(peer.received(CastNamespace.connection, type: "CONNECT").count == 1, "nothing was said to the changed device")
        let confirming = ScriptedPairingAgent([.code("yes")])
        await second.system.setPairingAgent(confirming)
        let again = try await second.activate()
        #expect(await second.system.activeRoutes.contains { $0.session == again.session })
        let repinned = try String(contentsOfFile: first.pinsPath, encoding: .utf8)
        #expect(repinned != pinned, "the confirmed certificate is pinned")
        await second.system.shutdown()
    }

    @Test func aChangedCertificateIsListedAndAcceptedOrForgottenThroughTrust() async throws {
        let peer = try CastReceiverPeer()
        let first = try await CastRig.make(peer: peer)
        await first.system.deactivate(try await first.activate().session)
        let listed = await first.system.pinnedIdentities()
        let pin = try #require(listed.first { $0.kind == .castCertificate && $0.deviceID == "cast:\(peer.id)" })
        #expect(pin.name == peer.name && pin.offered == nil)
        await first.system.shutdown()

        let (certificate, key) = try CastReceiverPeer.makeCertificate(in: peer.directory, name: "replaced")
        try await peer.command("new-cert \(certificate) \(key)")
        let second = try await CastRig.make(peer: peer, pinsPath: first.pinsPath)
        await second.system.setPairingAgent(ScriptedPairingAgent([.cancel]))
        await #expect(throws: MediaDeviceError.self) { _ = try await second.activate() }
        let changed = try #require(await second.system.pinnedIdentities().first { $0.deviceID == "cast:\(peer.id)" })
        #expect(changed.pinned == pin.pinned, "the old certificate stays pinned")
        let offered = try #require(changed.offered)
        #expect(offered != pin.pinned)
        await #expect(throws: MediaDeviceError.self, "a name that pins nothing") { _ = try await second.system.acceptIdentity(named: "Nobody") }

        #expect(try await second.system.acceptIdentity(named: peer.name) == 1)
        let silent = ScriptedPairingAgent([])
        await second.system.setPairingAgent(silent)
        await second.system.deactivate(try await second.activate().session)
        #expect(silent.receivedRequests.isEmpty, "accepted, the new certificate is the pinned one")
        let accepted = try #require(await second.system.pinnedIdentities().first { $0.deviceID == "cast:\(peer.id)" })
        #expect(accepted.pinned == offered && accepted.offered == nil)
        await #expect(throws: MediaDeviceError.self, "nothing new to accept") { _ = try await second.system.acceptIdentity(named: peer.name) }

        #expect(try await second.system.forgetIdentity(named: peer.name) == 1)
        #expect(await second.system.pinnedIdentities().isEmpty)
        #expect(try !String(contentsOfFile: first.pinsPath, encoding: .utf8).contains("cast:\(peer.id)"), "forgotten in the file too")
        await second.system.shutdown()
    }

    @Test func aHostileReceiverGetsTypedErrorsAndNoCrash() async throws {
        let rig = try await CastRig.make()
        let route = try await rig.activate()
        // Bad payloads in good frames: ignored one by one, the channel stays.
        try await rig.peer.command("send urn:x-cast:com.google.cast.receiver {not json")
        try await rig.peer.command(#"send urn:x-cast:com.google.cast.media {"type":"MEDIA_STATUS","status":[{"playerState":7}]}"#)
        try await rig.peer.command("send urn:x-cast:com.unknown.namespace whatever")
        // A truncated protobuf in a good frame: the same.
        try await rig.peer.command("send-raw 000000030a0112")
        try await Task.sleep(for: .milliseconds(300))
        let control = try await rig.system.startSession(on: route.session, identifier: nil, url: URL(string: "http://127.0.0.1:9/film.mp4")!)
        #expect(await eventually { control.playbackState == .playing }, "the channel survived bad messages")
        // An oversized length prefix: the framing is lost, the connection closed (nothing is
        // read into memory), and a reconnect brings the route back.
        try await rig.peer.command("send-raw 7fffffff00")
        #expect(await eventually(timeout: .seconds(5)) { control.playbackState == .buffering })
        #expect(await eventually(timeout: .seconds(10)) { control.playbackState == .playing })
        await rig.system.shutdown()
    }
}

/// The extension on the LAN transport's mDNS browser, with the receiver announced by
/// python3-zeroconf in a network namespace.
@Suite(.timeLimit(.minutes(2)), .enabled(if: CastReceiverPeer.available && NamespaceLab.isAvailable), .serialized)
struct CastDiscoveryTests {
    @Test func aReceiverAnnouncedOverMDNSPlaysAndItsGoodbyeEndsARouteThatIsDown() async throws {
        let lab = try NamespaceLab(rooms: 1)
        let room = lab.rooms[0]
        let peer = try CastReceiverPeer(lab: lab, room: room, name: "Kitchen Speaker", model: "Google Nest Mini", capabilities: 2052)
        let lan = LANTransport(configuration: .init(interfaces: [room.outside]))
        let transport = DNSSDServiceTransport(lan: lan, serviceTypes: [CastExtension.serviceType], tls: true)
        let system = RouteSystem()
        let recorder = await EventRecorder(system)
        var configuration = CastRig.fast
        configuration.maximumReconnectDelay = .milliseconds(500)
        let loaded = configuration
        try await system.load { manager in CastExtension(transport: transport, routingManager: manager, configuration: loaded) }
        await system.beginDiscovery(client: "test")
        #expect(await eventually(timeout: .seconds(10)) { await system.devicesList.contains { $0.displayName == "Kitchen Speaker" } })
        let device = try #require(await system.devicesList.first { $0.displayName == "Kitchen Speaker" })
        #expect(device.deviceType == .speaker)
        let route = try await system.activate(deviceID: device.id)
        let control = try await system.startSession(on: route.session, identifier: nil, url: URL(string: "http://\(room.hostAddress):9/song.mp3")!)
        #expect(await eventually { control.playbackState == .playing })
        // The speaker goes away: no more connections, then its goodbye.
        try await peer.command("refuse")
        try await peer.command("reset")
        #expect(await eventually(timeout: .seconds(5)) { control.playbackState == .buffering })
        try await peer.command("unannounce")
        let reason = await recorder.first(timeout: .seconds(10)) { event -> MediaDeviceError? in
            if case .routeDeactivated(let ended, let reason?) = event, ended.session == route.session { return reason }
            return nil
        }
        #expect(reason?.code == .deviceLost, "\(String(describing: reason))")
        await system.shutdown()
    }
}
