import Foundation
import IPNetwork
import HTTPServing
import LANTransport
import Logging
import MediaClock
import MediaDevice
import RoutingModel
import MediaRouteCommands
import MediaRouteTestSupport
import Testing
import Transport
import UPnP
import UPnPRendererExtension
import WiFiTransport
import MediaRouteTesting


/// Helpers shared by the renderer tests.
enum Lab {
    static let logger: Logger = {
        var logger = Logger(label: "test.upnp")
        logger.logLevel = ProcessInfo.processInfo.environment["UPNP_TEST_DEBUG"] != nil ? .debug : .info
        return logger
    }()

    static func transport(_ lab: NamespaceLab, _ configure: (inout LANTransport.Configuration) -> Void = { _ in }) -> LANTransport {
        var configuration = LANTransport.Configuration(interfaces: lab.rooms.map(\.outside))
        configure(&configuration)
        return LANTransport(configuration: configuration, logger: logger)
    }

    static func waitUntil(_ control: any InterfaceControllable, _ state: PlaybackSnapshot.State, timeout: Duration = .seconds(8)) async -> Bool {
        await eventually(timeout: timeout) { control.playbackState == state }
    }

    /// Serves `path` at `/NAME` and 404 elsewhere, on the host side of a room (a media server like a NAS).
    static func mediaServer(_ room: NamespaceLab.Room, file path: String) async throws -> HTTPServer {
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        let name = "/" + URL(fileURLWithPath: path).lastPathComponent
        return try await HTTPServer(host: room.hostAddress) { request in
            guard request.path == name else { return HTTPServerResponse(status: 404) }
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "audio/wav")], body: .file(path: path, range: nil, total: size))
        }
    }
}

@Suite(.serialized, .timeLimit(.minutes(3)), .enabled(if: NamespaceLab.renderersAvailable))
struct GmediarenderTests {
    /// A renderer whose web server refuses the first description fetch (seen with gmediarender
    /// under load: SSDP answered before its server listened): the extension asks again by
    /// itself once the host's pause is over — SSDP repeats nothing new for the device, so no
    /// event would bring it back — and the renderer is listed.
    @Test func aRendererThatRefusedItsFirstDescriptionIsAskedAgainByItself() async throws {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        // Connections to its web server are refused (a reset, as from a closed port) until the rule goes.
        let rule = ["INPUT", "-p", "tcp", "--dport", "49494", "-j", "REJECT", "--reject-with", "tcp-reset"]
        try NamespaceLab.ip(["netns", "exec", room.namespace, "iptables", "-I"] + rule)
        try lab.gmediarender(in: room, name: "Late TV", uuid: "0a1b2c3d-0000-4000-8000-000000000041")
        let log = RoutingLog()
        let upnp = UPnPRendererExtension(transport: Lab.transport(lab), routingManager: log.manager, logger: Lab.logger)
        await upnp.startDeviceDiscovery()
        #expect(await eventually(timeout: .seconds(10)) {
            let counts = await upnp.describeCounts
            return counts.started >= 1 && counts.running == 0
        })
        try await Task.sleep(for: .milliseconds(300))
        #expect(log.events.value.isEmpty, "nothing reported while the description is refused: \(log.events.value)")
        try NamespaceLab.ip(["netns", "exec", room.namespace, "iptables", "-D"] + rule)
        let found = await log.device(named: "Late TV", timeout: .seconds(10))
        #expect(found != nil, "listed after the pause, with no new announcement")
        let started = await upnp.describeCounts.started
        #expect(started >= 2)
        await upnp.shutdown()
    }

    @Test func discoveryDescriptionPlaybackEventsAndStop() async throws {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        let renderer = try lab.gmediarender(in: room, name: "Lab TV", uuid: "0a1b2c3d-0000-4000-8000-000000000001")
        let log = RoutingLog()
        let upnp = UPnPRendererExtension(
            transport: Lab.transport(lab), routingManager: log.manager,
            configuration: .init(pollInterval: .milliseconds(300), subscriptionTimeout: 4), logger: Lab.logger)
        await upnp.startDeviceDiscovery()
        let found = await log.device(named: "Lab TV")
        let device = try #require(found)
        #expect(device.id == "uuid:0a1b2c3d-0000-4000-8000-000000000001")
        #expect(device.capabilities.contains(.urlPlayback))
        #expect(device.volumeControl == .absolute)
        #expect(device.requiredNetworkEndpoints.first?.address == .ip(host: room.deviceAddress, port: 49494, interface: room.outside))

        let session = MediaOutputSession(deviceID: device.id)
        await upnp.activateDevice(device, session: session, for: .urlPlayback)
        #expect(await log.activated(session))
        let file = try lab.wavFile(seconds: 40)
        await upnp.startSession(session, identifier: "test", url: URL(fileURLWithPath: file))
        let started = await log.control(for: session)
        let control = try #require(
            started, "\(log.events.value.suffix(1)); gmediarender \(renderer.isRunning ? "running" : "exited \(renderer.wait())"): \(lab.log("gmediarender-\(room.inside).log").suffix(800))")
        #expect(await Lab.waitUntil(control, .playing), "the renderer reports PLAYING")
        #expect(await eventually(timeout: .seconds(6)) { control.snapshot.position >= 2 }, "the polled position advances")
        #expect(control.metadata.title == "tone.wav")
        #expect(await upnp.servedFileCount == 1)

        // GENA: subscribed to both services, the initial events came, and a renewal happened (4 s granted).
        let status = try #require(await upnp.eventStatus(of: session))
        #expect(status.subscriptions.keys.sorted() == ["AVTransport", "RenderingControl"])
        #expect(status.healthy && status.events >= 2)
        #expect(status.granted == ["AVTransport": 4, "RenderingControl": 4])

        control.pause()
        #expect(await Lab.waitUntil(control, .paused), "PAUSED_PLAYBACK arrives")
        try await Task.sleep(for: .milliseconds(600))
        // Seeking in a file we serve: the renderer fetches with Range.
        control.seek(to: 20)
        try await Task.sleep(for: .milliseconds(600))
        control.play()
        #expect(await Lab.waitUntil(control, .playing))
        #expect(await eventually(timeout: .seconds(5)) { control.snapshot.position >= 20 && control.snapshot.position < 30 }, "position after the seek: \(control.snapshot.position)")

        // A queue: the next item is set on the renderer and served until the session ends.
        try await upnp.enqueue(URL(fileURLWithPath: try lab.wavFile(seconds: 5, name: "next.wav")), session: session)
        let mediaInfo = try await deviceCall(Lab.transport(lab), device.requiredNetworkEndpoints[0], "AVTransport", "GetMediaInfo")
        #expect(mediaInfo["NextURI"]?.hasSuffix("/next.wav") == true, "\(mediaInfo)")
        #expect(await upnp.servedFileCount == 2)

        // Volume from our side reaches the device and comes back as an event.
        control.volume = 0.3
        #expect(await eventually { await upnp.volume(for: device) == 0.3 })
        let renewed = await eventually(timeout: .seconds(5)) { (await upnp.eventStatus(of: session)?.renewals ?? 0) >= 1 }
        #expect(renewed, "the 4 s subscription was renewed")
        let sids = try #require(await upnp.eventStatus(of: session)?.subscriptions)

        try await Task.sleep(for: .milliseconds(600))
        await upnp.stopSession(session)
        #expect(await eventually { await upnp.servedFileCount == 0 }, "the file is no longer served")
        // Unsubscribed: renewing the old subscription is refused now.
        let endpoint = device.requiredNetworkEndpoints[0]
        let transport = Lab.transport(lab)
        #expect(await eventually {
            let renewal = try? await transport.fetch(
                "SUBSCRIBE", "http://\(room.deviceAddress):49494/upnp/event/rendertransport1", for: endpoint,
                headers: [("SID", sids["AVTransport"]!), ("TIMEOUT", "Second-60")])
            return renewal?.status == 412
        })
        let info = try await soap(transport, endpoint, "GetTransportInfo")
        #expect(info.contains("STOPPED"))
        await upnp.shutdown()
    }

    @Test func byebyeOnSIGTERMAndExpiryAfterSIGKILL() async throws {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        let renderer = try lab.gmediarender(in: room, name: "Kitchen", uuid: "0a1b2c3d-0000-4000-8000-000000000002")
        let log = RoutingLog()
        // Announcements promise 100 s; a cap of 3 s with re-searches every second keeps a live device and drops a dead one soon.
        let transport = Lab.transport(lab) { $0.maximumMaxAge = 3; $0.maximumSearchInterval = .seconds(1) }
        let upnp = UPnPRendererExtension(transport: transport, routingManager: log.manager, logger: Lab.logger)
        await upnp.startDeviceDiscovery()
        let device = try #require(await log.device(named: "Kitchen"))
        try await Task.sleep(for: .seconds(4))
        #expect(await upnp.knownDevices.count == 1, "re-searches keep a live device past the capped max-age")
        renderer.kill(SIGTERM)
        renderer.wait()
        #expect(await log.lost(device.id, timeout: .seconds(4)), "ssdp:byebye removes it (after the restart grace)")

        let second = try lab.gmediarender(in: room, name: "Kitchen", uuid: "0a1b2c3d-0000-4000-8000-000000000002")
        #expect(await eventually(timeout: .seconds(5)) { await upnp.knownDevices.count == 1 }, "found again")
        let lostBefore = log.events.value.count
        let killedAt = ContinuousClock.now
        second.kill(SIGKILL)
        second.wait()
        #expect(await eventually(timeout: .seconds(6)) {
            log.events.value.dropFirst(lostBefore).contains { if case .lostDevice = $0 { true } else { false } }
        }, "no byebye after SIGKILL: it expires")
        #expect(ContinuousClock.now - killedAt >= .seconds(1), "expiry, not an immediate loss")
        await upnp.shutdown()
    }

    @Test func unicastSearchFindsAManualHost() async throws {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        try lab.gmediarender(in: room, name: "Den", uuid: "0a1b2c3d-0000-4000-8000-000000000003")
        let log = RoutingLog()
        // No multicast at all: no interfaces to search on, no NOTIFY listener; only the manual host.
        let transport = Lab.transport(lab) { $0.interfaces = []; $0.listensForNotifications = false; $0.manualHosts = [room.deviceAddress] }
        let upnp = UPnPRendererExtension(transport: transport, routingManager: log.manager, logger: Lab.logger)
        await upnp.startDeviceDiscovery()
        let device = try #require(await log.device(named: "Den"))
        #expect(device.requiredNetworkEndpoints.first?.facts.interfaceAddress == room.hostAddress)
        await upnp.shutdown()
    }

    @Test func aURLThatIsNotThereIsCaughtByTheWatchdog() async throws {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        try lab.gmediarender(in: room, name: "Attic", uuid: "0a1b2c3d-0000-4000-8000-000000000004")
        let server = try await Lab.mediaServer(room, file: try lab.wavFile(seconds: 5))
        let log = RoutingLog()
        let upnp = UPnPRendererExtension(
            transport: Lab.transport(lab), routingManager: log.manager,
            configuration: .init(pollInterval: .milliseconds(300), watchdog: .seconds(3)), logger: Lab.logger)
        await upnp.startDeviceDiscovery()
        let device = try #require(await log.device(named: "Attic"))
        let session = MediaOutputSession(deviceID: device.id)
        await upnp.activateDevice(device, session: session, for: .urlPlayback)
        #expect(await log.activated(session))
        await upnp.startSession(session, identifier: nil, url: URL(string: "http://\(room.hostAddress):\(server.port)/missing.wav")!)
        let control = try #require(await log.control(for: session))
        let failure = try #require(await log.failure(of: session, timeout: .seconds(10)))
        #expect(failure.code == .sessionFailed)
        #expect(failure.message.contains("has not advanced"))
        #expect(control.playbackState == .failed)
        await upnp.shutdown()
        await server.close()
    }

    @Test func twoInterfacesEachFindTheirOwnRenderer() async throws {
        let lab = try NamespaceLab(rooms: 2)
        try lab.gmediarender(in: lab.rooms[0], name: "Left", uuid: "0a1b2c3d-0000-4000-8000-000000000005")
        try lab.gmediarender(in: lab.rooms[1], name: "Right", uuid: "0a1b2c3d-0000-4000-8000-000000000006")
        let log = RoutingLog()
        let upnp = UPnPRendererExtension(transport: Lab.transport(lab), routingManager: log.manager, logger: Lab.logger)
        await upnp.startDeviceDiscovery()
        let left = try #require(await log.device(named: "Left"))
        let right = try #require(await log.device(named: "Right"))
        for (device, room) in [(left, lab.rooms[0]), (right, lab.rooms[1])] {
            let endpoint = try #require(device.requiredNetworkEndpoints.first)
            #expect(endpoint.address == .ip(host: room.deviceAddress, port: 49494, interface: room.outside))
            #expect(endpoint.facts.interfaceAddress == room.hostAddress)
        }
        await upnp.shutdown()
    }

    @Test func volumeIsClampedToTheDeclaredRange() async throws {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        try lab.gmediarender(in: room, name: "Study", uuid: "0a1b2c3d-0000-4000-8000-000000000007")
        let log = RoutingLog()
        let transport = Lab.transport(lab)
        let upnp = UPnPRendererExtension(transport: transport, routingManager: log.manager, logger: Lab.logger)
        await upnp.startDeviceDiscovery()
        let device = try #require(await log.device(named: "Study"))
        let endpoint = device.requiredNetworkEndpoints[0]
        await upnp.setVolume(1.5, for: device)  // gmediarender would take 150; we send the SCPD's maximum
        #expect(await eventually {
            (try? await soap(transport, endpoint, "GetVolume", service: "rendercontrol1", type: "RenderingControl", arguments: "<Channel>Master</Channel>"))?
                .contains("<CurrentVolume>100</CurrentVolume>") == true
        })
        #expect(await upnp.volume(for: device) == 1)
        await upnp.setVolume(0.25, for: device)
        #expect(await eventually {
            (try? await soap(transport, endpoint, "GetVolume", service: "rendercontrol1", type: "RenderingControl", arguments: "<Channel>Master</Channel>"))?
                .contains("<CurrentVolume>25</CurrentVolume>") == true
        })
        await upnp.muteDevice(device)
        #expect(await upnp.isDeviceMuted(device))
        await upnp.shutdown()
    }
}

/// A raw SOAP call with curl-like plainness, to check the device's side independently of the extension.
func soap(
    _ transport: LANTransport, _ endpoint: Endpoint, _ action: String, service: String = "rendertransport1", type: String = "AVTransport",
    arguments: String = ""
) async throws -> String {
    guard case .ip(let host, let port, _) = endpoint.address else { return "" }
    let serviceType = "urn:schemas-upnp-org:service:\(type):1"
    let body = """
        <?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body>\
        <u:\(action) xmlns:u="\(serviceType)"><InstanceID>0</InstanceID>\(arguments)</u:\(action)></s:Body></s:Envelope>
        """
    let response = try await transport.fetch(
        "POST", "http://\(host):\(port)/upnp/control/\(service)", for: endpoint,
        headers: [("Content-Type", "text/xml"), ("SOAPACTION", "\"\(serviceType)#\(action)\"")], body: Array(body.utf8))
    return String(decoding: response.body, as: UTF8.self)
}

/// A SOAP call built from the device's own description, independent of the extension
/// (to change the device "from its remote control" and to read its state).
func deviceCall(
    _ transport: LANTransport, _ endpoint: Endpoint, _ kind: String, _ action: String, _ arguments: [(String, String)] = []
) async throws -> [String: String] {
    let location = try #require(endpoint.facts.descriptionLocation.flatMap(HTTPURL.init))
    let document = try await transport.fetch("GET", location.description, for: endpoint)
    let description = try DeviceDescription.parse(document.body, location: location)
    let service = try #require(description.service(kind))
    let response = try await transport.fetch(
        "POST", service.controlURL.description, for: endpoint,
        headers: [("Content-Type", "text/xml; charset=\"utf-8\""), ("SOAPACTION", SOAP.actionHeader(action: action, serviceType: service.serviceType))],
        body: SOAP.request(action: action, serviceType: service.serviceType, arguments: [("InstanceID", "0")] + arguments))
    return try SOAP.response(status: response.status, body: response.body, action: action)
}

@Suite(.serialized, .timeLimit(.minutes(3)), .enabled(if: NamespaceLab.renderersAvailable))
struct RygelTests {
    @Test func playbackWithEventsSeekVolumeAndByebye() async throws {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        let rygel = try lab.rygel(in: room, title: "Lab Speaker")
        let log = RoutingLog()
        let transport = Lab.transport(lab)
        let upnp = UPnPRendererExtension(
            transport: transport, routingManager: log.manager, configuration: .init(pollInterval: .milliseconds(300), subscriptionTimeout: 6),
            logger: Lab.logger)
        await upnp.startDeviceDiscovery()
        let found = await log.device(named: "Lab Speaker", timeout: .seconds(20))
        let device = try #require(found, "rygel log: \(lab.log("rygel-\(room.inside).log").suffix(600))")
        #expect(device.deviceType == .speaker)
        let endpoint = try #require(device.requiredNetworkEndpoints.first)

        let session = MediaOutputSession(deviceID: device.id)
        await upnp.activateDevice(device, session: session, for: .urlPlayback)
        #expect(await log.activated(session))
        await upnp.startSession(session, identifier: nil, url: URL(fileURLWithPath: try lab.wavFile(seconds: 40)))
        let started = await log.control(for: session)
        let control = try #require(started, "\(log.events.value.suffix(3))")
        #expect(await Lab.waitUntil(control, .playing))
        #expect(await eventually(timeout: .seconds(6)) { control.snapshot.position >= 1.5 })
        // rygel reports milliseconds: positions are not whole seconds.
        #expect(await eventually(timeout: .seconds(4)) { control.snapshot.position.rounded() != control.snapshot.position })
        let status = try #require(await upnp.eventStatus(of: session))
        #expect(status.healthy)

        control.pause()
        #expect(await Lab.waitUntil(control, .paused))
        control.seek(to: 15)
        try await Task.sleep(for: .milliseconds(500))
        control.play()
        #expect(await Lab.waitUntil(control, .playing))
        #expect(await eventually(timeout: .seconds(6)) { control.snapshot.position >= 15 && control.snapshot.position < 25 }, "\(control.snapshot.position)")

        // The device's own volume change arrives as a RenderingControl event.
        let changes = log.events.value.count
        _ = try await deviceCall(transport, endpoint, "RenderingControl", "SetVolume", [("Channel", "Master"), ("DesiredVolume", "40")])
        #expect(await eventually { log.events.value.dropFirst(changes).contains { if case .volumeChanged = $0 { true } else { false } } })
        #expect(await eventually { await upnp.volume(for: device) == 0.4 })
        // Too loud is clamped to the SCPD's maximum (rygel refuses 150 with 501).
        control.volume = 1.5
        #expect(await eventually {
            (try? await deviceCall(transport, endpoint, "RenderingControl", "GetVolume", [("Channel", "Master")]))?["CurrentVolume"] == "100"
        })
        // We asked for 6 s; rygel grants 300 s, and the granted time is what renewal follows.
        #expect(await upnp.eventStatus(of: session)?.granted == ["AVTransport": 300, "RenderingControl": 300])
        #expect(await upnp.eventStatus(of: session)?.renewals == 0)

        await upnp.stopSession(session)
        #expect(await eventually {
            (try? await deviceCall(transport, endpoint, "AVTransport", "GetTransportInfo"))?["CurrentTransportState"] == "STOPPED"
        })
        rygel.kill(SIGTERM)
        #expect(await log.lost(device.id, timeout: .seconds(5)), "byebye when rygel stops")
        rygel.wait()
        await upnp.shutdown()
    }
}

@Suite(.serialized, .timeLimit(.minutes(2)), .enabled(if: NamespaceLab.renderersAvailable))
struct LANCommandAndInterfaceTests {
    @Test func mediaroutectlPlaysALocalFileOnARenderer() async throws {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        try lab.gmediarender(in: room, name: "Hall TV", uuid: "0a1b2c3d-0000-4000-8000-000000000010")
        let file = try lab.wavFile(seconds: 20, name: "song.wav")
        let console = RecordingConsole()
        let play = try MediaRouteCtl.Play.parse([file, "--to", "Hall TV", "--transports", "lan", "--lan-interface", room.outside, "--seconds", "2.5"])
        try await play.run(console: console)
        #expect(console.lines.contains { $0.hasPrefix("Playing file://") && $0.hasSuffix("on Hall TV") }, "\(console.lines)")
        #expect(console.lines.contains { $0.contains("playing") }, "the renderer reported playing: \(console.lines)")
        #expect(console.lines.last == "Stopped.")
        let missing = try MediaRouteCtl.Play.parse(["/no/such/file.mp3", "--to", "Hall TV", "--lan-interface", room.outside])
        await #expect { try await missing.run(console: RecordingConsole()) } throws: { "\($0)".contains("neither a URL nor a file") }
    }

    /// Issue "a real box shows real devices", done-when: with no flags at all, inside a
    /// namespace whose only link leads to gmediarender, `devices --json` lists the renderer
    /// and no simulated device; the transports that cannot open are notices on stderr.
    @Test func devicesWithNoFlagsFindsTheRendererAndNothingSimulated() async throws {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        try lab.gmediarender(in: room, name: "Attic TV", uuid: "0a1b2c3d-0000-4000-8000-000000000012")
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("mediaroutectl").path
        let (status, output) = try await ChildProcess.runOffPool([
            "/usr/sbin/ip", "netns", "exec", room.namespace, "/bin/sh", "-c", "'\(binary)' devices --json --seconds 4 2>/dev/null",
        ])
        #expect(status == 0, "\(output)")
        struct Row: Decodable { let name, type: String; let protocols: [String] }
        let rows = try JSONDecoder().decode([Row].self, from: Data(output.utf8))
        #expect(rows.map(\.name) == ["Attic TV"], "\(output)")
        #expect(rows.first?.protocols == ["UPnP/DLNA"])
        #expect(!output.contains("Living Room TV") && !output.contains("Kitchen Speaker"))
        // The same with --simulate: the simulated TV and speaker only (no real transport unless asked).
        let (_, simulated) = try await ChildProcess.runOffPool([
            "/usr/sbin/ip", "netns", "exec", room.namespace, "/bin/sh", "-c", "'\(binary)' devices --json --simulate 2>/dev/null",
        ])
        let simulatedRows = try JSONDecoder().decode([Row].self, from: Data(simulated.utf8))
        #expect(simulatedRows.map(\.name) == ["Living Room TV", "Kitchen Speaker"], "\(simulated)")
        // Transports that cannot open here are one notice line each, and not an error.
        let (noticeStatus, notices) = try await ChildProcess.runOffPool([
            "/usr/sbin/ip", "netns", "exec", room.namespace, "/bin/sh", "-c",
            "'\(binary)' devices --transports bluez,wifi --bluez-bus unix:path=/nonexistent/bus 2>&1 >/dev/null",
        ])
        #expect(noticeStatus == 0, "\(notices)")
        let lines = notices.split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("Bluetooth: ") }.count == 1, "\(notices)")
        #expect(lines.filter { $0.hasPrefix("Wi-Fi: ") }.count == 1, "\(notices)")
    }

    @Test func theRefreshHookFollowsInterfacesComingAndGoing() async throws {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        try NamespaceLab.ip(["link", "set", room.outside, "down"])
        try lab.gmediarender(in: room, name: "Late TV", uuid: "0a1b2c3d-0000-4000-8000-000000000011")
        let monitor = try NetworkChangeMonitor()
        defer { monitor.stop() }
        let transport = Lab.transport(lab) { $0.initialSearchInterval = .seconds(30) }
        let restarter = DiscoveryRestarter(changes: monitor.changes, transport: transport)
        defer { restarter.stop() }
        let log = RoutingLog()
        let upnp = UPnPRendererExtension(transport: transport, routingManager: log.manager, logger: Lab.logger)
        await upnp.startDeviceDiscovery()
        try await Task.sleep(for: .milliseconds(500))
        #expect(await upnp.knownDevices.isEmpty, "the interface is down")
        try NamespaceLab.ip(["link", "set", room.outside, "up"])
        // Found through the hook's immediate search, long before the 30 s re-search.
        let device = try #require(await log.device(named: "Late TV", timeout: .seconds(5)))
        try NamespaceLab.ip(["link", "set", room.outside, "down"])
        #expect(await log.lost(device.id, timeout: .seconds(5)), "devices of a gone interface are lost")
        await upnp.shutdown()
    }
}

@Suite(.serialized, .timeLimit(.minutes(3)), .enabled(if: NamespaceLab.renderersAvailable))
struct RygelDiscoveryAndFaultTests {
    @Test func unicastTwoInterfacesRenewalUnsubscribeA404AndExpiry() async throws {
        let lab = try NamespaceLab(rooms: 2)
        try lab.rygel(in: lab.rooms[0], title: "Rygel Left")
        let right = try lab.rygel(in: lab.rooms[1], title: "Rygel Right")
        let log = RoutingLog()
        let transport = Lab.transport(lab) { $0.maximumMaxAge = 3; $0.maximumSearchInterval = .seconds(1) }
        let upnp = UPnPRendererExtension(
            transport: transport, routingManager: log.manager,
            configuration: .init(pollInterval: .milliseconds(300), watchdog: .seconds(3), maximumRenewalInterval: .seconds(2)), logger: Lab.logger)
        await upnp.startDeviceDiscovery()
        let leftFound = await log.device(named: "Rygel Left", timeout: .seconds(20))
        let rightFound = await log.device(named: "Rygel Right", timeout: .seconds(20))
        let left = try #require(leftFound)
        let rightDevice = try #require(rightFound)
        for (device, room) in [(left, lab.rooms[0]), (rightDevice, lab.rooms[1])] {
            let endpoint = try #require(device.requiredNetworkEndpoints.first)
            guard case .ip(let host, _, let interface) = endpoint.address else { Issue.record("not an IP endpoint"); continue }
            #expect(host == room.deviceAddress && interface == room.outside && endpoint.facts.interfaceAddress == room.hostAddress)
        }

        // Unicast only: no multicast interface, no NOTIFY listener.
        let unicastLog = RoutingLog()
        let unicast = UPnPRendererExtension(
            transport: Lab.transport(lab) { $0.interfaces = []; $0.listensForNotifications = false; $0.manualHosts = [lab.rooms[0].deviceAddress] },
            routingManager: unicastLog.manager, logger: Lab.logger)
        await unicast.startDeviceDiscovery()
        #expect(await unicastLog.device(named: "Rygel Left") != nil)
        await unicast.shutdown()

        // A URL that is not there: rygel checks it and refuses with a UPnP error, kept in the typed error.
        let server = try await Lab.mediaServer(lab.rooms[0], file: try lab.wavFile(seconds: 3))
        let missing = MediaOutputSession(deviceID: left.id)
        await upnp.activateDevice(left, session: missing, for: .urlPlayback)
        #expect(await log.activated(missing))
        await upnp.startSession(missing, identifier: nil, url: URL(string: "http://\(lab.rooms[0].hostAddress):\(server.port)/missing.wav")!)
        let failure = try #require(await log.failure(of: missing))
        #expect(failure.code == .sessionFailed)
        #expect(failure.protocolErrorCode == 716 || failure.message.contains("has not advanced"), "\(failure)")
        await server.close()

        // Renewal within the 300 s rygel grants (we renew every 2 s here), then unsubscribe on stop.
        let session = MediaOutputSession(deviceID: left.id)
        await upnp.activateDevice(left, session: session, for: .urlPlayback)
        await upnp.startSession(session, identifier: nil, url: URL(fileURLWithPath: try lab.wavFile(seconds: 30, name: "long.wav")))
        let control = try #require(await log.control(for: session))
        #expect(await Lab.waitUntil(control, .playing))
        #expect(await eventually(timeout: .seconds(5)) { (await upnp.eventStatus(of: session)?.renewals ?? 0) >= 2 }, "renewed")
        let sid = try #require(await upnp.eventStatus(of: session)?.subscriptions["AVTransport"])
        await upnp.stopSession(session)
        let endpoint = left.requiredNetworkEndpoints[0]
        let location = try #require(endpoint.facts.descriptionLocation.flatMap(HTTPURL.init))
        let description = try DeviceDescription.parse(try await transport.fetch("GET", location.description, for: endpoint).body, location: location)
        let eventURL = try #require(description.service("AVTransport")?.eventSubscriptionURL)
        #expect(await eventually {
            let renewal = try? await transport.fetch("SUBSCRIBE", eventURL.description, for: endpoint, headers: [("SID", sid), ("TIMEOUT", "Second-60")])
            return renewal?.status == 412
        }, "the old subscription is gone")

        // SIGKILL: no byebye; the device expires.
        right.kill(SIGKILL)
        right.wait()
        #expect(await log.lost(rightDevice.id, timeout: .seconds(6)))
        #expect(await upnp.knownDevices.map(\.displayName) == ["Rygel Left"])
        await upnp.shutdown()
    }
}
