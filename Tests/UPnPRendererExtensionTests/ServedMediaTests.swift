import Foundation
import HTTPServing
import LANTransport
import Testing
import UPnP
@testable import UPnPRendererExtension

@Suite struct ServedMediaTests {
    @Test func renderersAreServedFilesWithDLNAHeadersAndTheirEventsOnOneRoute() throws {
        let path = NSTemporaryDirectory() + "served-\(UUID().uuidString).mp3"
        try Data(repeating: 7, count: 10).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let routes = CallbackRoutes()
        let token = routes.files.add(ServedFiles.File(path: path, mimeType: "audio/mpeg", allowedHost: "198.51.100.2", extraHeaders: CallbackRoutes.dlnaHeaders))
        let answer = routes.handle(HTTPServerRequest(method: "GET", path: "/media/\(token)/a.mp3", headers: [:], body: [], remoteHost: "198.51.100.2"))
        #expect(answer.status == 200 && answer.headers.contains { $0 == ("transferMode.dlna.org", "Streaming") })
        #expect(routes.handle(HTTPServerRequest(method: "GET", path: "/etc/passwd", headers: [:], body: [], remoteHost: "198.51.100.2")).status == 404)
        #expect(routes.handle(HTTPServerRequest(method: "GET", path: "/gena/\(token)", headers: [:], body: [], remoteHost: "198.51.100.2")).status == 405)
    }

    @Test func eventsNeedAKnownTokenAndTheGENAHeaders() async {
        let routes = CallbackRoutes()
        let (stream, sink) = AsyncStream.makeStream(of: GENAEvent.self)
        let token = routes.addEvents(sink, from: "198.51.100.2")
        func notify(_ path: String, _ headers: [String: String], from host: String = "198.51.100.2") -> Int {
            routes.handle(HTTPServerRequest(method: "NOTIFY", path: path, headers: headers, body: Array("<x/>".utf8), remoteHost: host)).status
        }
        let good = ["nt": "upnp:event", "nts": "upnp:propchange", "sid": "uuid:s", "seq": "0"]
        #expect(notify("/gena/\(token)", good) == 200)
        #expect(notify("/gena/\(token)", good, from: "198.51.100.66") == 403, "only the renderer may send its events")
        #expect(notify("/gena/\(ServedFiles.token())", good) == 412)
        #expect(notify("/gena/\(token)", good.merging(["nts": "upnp:other"]) { $1 }) == 400)
        #expect(notify("/gena/\(token)", good.merging(["seq": "-1"]) { $1 }) == 412)
        sink.finish()
        var received: [GENAEvent] = []
        for await event in stream { received.append(event) }
        #expect(received.map(\.sid) == ["uuid:s"])
    }

    @Test func deviceTypeFromNamesAndSinks() {
        func description(_ name: String, _ manufacturer: String = "") -> DeviceDescription {
            DeviceDescription(deviceType: "urn:schemas-upnp-org:device:MediaRenderer:1", friendlyName: name, manufacturer: manufacturer, modelName: "", udn: "uuid:x", services: [])
        }
        let video = [ProtocolInfo(contentFormat: "video/mp4")]
        let audio = [ProtocolInfo(contentFormat: "audio/mpeg")]
        #expect(Renderer.deviceType(description("Living Room TV"), sinks: audio) == .tv)
        #expect(Renderer.deviceType(description("Kitchen", "Sonos"), sinks: video) == .speaker)
        #expect(Renderer.deviceType(description("Box"), sinks: video) == .tv)
        #expect(Renderer.deviceType(description("Box"), sinks: audio) == .speaker)
        #expect(Renderer.deviceType(description("Stvx"), sinks: audio) == .speaker, "hints are whole words")
    }
}
