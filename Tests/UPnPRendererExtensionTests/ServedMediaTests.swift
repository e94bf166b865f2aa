import Foundation
import HTTPServing
import LANTransport
import Testing
import UPnP
@testable import UPnPRendererExtension

@Suite struct ServedMediaTests {
    @Test func rangesAsRenderersSendThem() {
        #expect(ByteRange.parse("bytes=0-", total: 100) == 0...99)
        #expect(ByteRange.parse("bytes=10-19", total: 100) == 10...19)
        #expect(ByteRange.parse("bytes=90-500", total: 100) == 90...99)
        #expect(ByteRange.parse("bytes=-10", total: 100) == 90...99)
        #expect(ByteRange.parse("Bytes=5-", total: 100) == 5...99)
        for bad in ["bytes=100-", "bytes=20-10", "bytes=0-1,5-6", "items=0-", "bytes=-0", "bytes=x-", "bytes=-"] {
            #expect(ByteRange.parse(bad, total: 100) == nil, "\(bad)")
        }
        #expect(ByteRange.parse("bytes=0-", total: 0) == nil)
    }

    @Test func onlyTheRendererGetsOnlyTheHandedFile() throws {
        let path = NSTemporaryDirectory() + "served-\(UUID().uuidString).mp3"
        try Data(repeating: 7, count: 1000).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let routes = CallbackRoutes()
        let token = routes.addFile(ServedFile(path: path, mimeType: "audio/mpeg", allowedHost: "198.51.100.2"))
        #expect(token.count == 32 && token.allSatisfy(\.isHexDigit))
        func get(_ path: String, from host: String = "198.51.100.2", range: String? = nil) -> HTTPServerResponse {
            var headers: [String: String] = [:]
            if let range { headers["range"] = range }
            return routes.handle(HTTPServerRequest(method: "GET", path: path, headers: headers, body: [], remoteHost: host))
        }
        let whole = get("/media/\(token)/a.mp3")
        #expect(whole.status == 200)
        #expect(whole.headers.contains { $0 == ("Content-Type", "audio/mpeg") } && whole.headers.contains { $0 == ("Accept-Ranges", "bytes") })
        let part = get("/media/\(token)/a.mp3", range: "bytes=500-")
        #expect(part.status == 206 && part.headers.contains { $0 == ("Content-Range", "bytes 500-999/1000") })
        #expect(get("/media/\(token)/a.mp3", range: "bytes=2000-").status == 416)
        #expect(get("/media/\(token)/a.mp3", from: "198.51.100.9").status == 403, "another host")
        #expect(get("/media/\(CallbackRoutes.token())/a.mp3").status == 404, "a guessed token")
        #expect(get("/etc/passwd").status == 404)
        #expect(get("/media/../../etc/passwd").status == 404)
        routes.removeFile(token)
        #expect(get("/media/\(token)/a.mp3").status == 404, "not after the session")
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
        #expect(notify("/gena/\(CallbackRoutes.token())", good) == 412)
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
