import Foundation
import HTTPServing
import LANTransport
import MediaDevice
import RoutingModel
import MediaRouteTestSupport
import Transport
import UPnPRendererExtension
import MediaRouteTesting

/// Issue 4's figures, on one gmediarender in a network namespace, in one run:
/// MediaRoute next to async_upnp_client and gssdp-discover.
extension Bench {
    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
    }

    static func list(_ values: [Double]) -> String { values.map { format($0, 1) }.joined(separator: " ") }

    /// Peak resident memory (KiB) of a process, sampled every 20 ms from /proc until it ends.
    static func peakRSS(_ arguments: [String]) async throws -> Int {
        let process = try ChildProcess(arguments, outputFD: open("/dev/null", O_WRONLY))
        var peak = 0
        while process.isRunning {
            if let status = try? String(contentsOfFile: "/proc/\(process.pid)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
                let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])
            {
                peak = max(peak, kib)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return peak
    }

    static func upnp(mediaroutectl: String) async throws {
        guard NamespaceLab.renderersAvailable else { return }
        let python = ProcessInfo.processInfo.environment["UPNP_PYTHON"] ?? "/var/tmp/upnp-venv/bin/python"
        guard FileManager.default.isExecutableFile(atPath: python), FileManager.default.fileExists(atPath: "Benchmarks/upnp_peer.py") else {
            print("upnp: needs async-upnp-client (python3 -m venv /var/tmp/upnp-venv && /var/tmp/upnp-venv/bin/pip install async-upnp-client,")
            print("      or UPNP_PYTHON=...) and the repository root as the working directory")
            return
        }
        let runs = 9
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        try lab.gmediarender(in: room, name: "Bench TV", uuid: "0a1b2c3d-0000-4000-8000-0000000000be")
        let wav = try lab.wavFile(seconds: 60)
        let size = (try FileManager.default.attributesOfItem(atPath: wav)[.size] as? Int) ?? 0
        let server = try await HTTPServer(host: room.hostAddress) { request in
            HTTPServerResponse(status: 200, headers: [("Content-Type", "audio/wav")], body: .file(path: wav, range: nil, total: size))
        }
        let mediaURL = "http://\(room.hostAddress):\(server.port)/tone.wav"
        try await Task.sleep(for: .seconds(1))
        let clock = ContinuousClock()
        // Only the search counts: no NOTIFY listener, like async_search.
        let configuration = LANTransport.Configuration(interfaces: [room.outside], listensForNotifications: false)

        // 1. Discovery start → first SSDP answer (transport), and → renderer reported with its description parsed.
        var firstReply: [Double] = []
        for _ in 0..<runs {
            let start = clock.now
            for await event in LANTransport(configuration: configuration).discover() {
                if case .appeared = event { break }
            }
            firstReply.append(milliseconds(clock.now - start))
            try await Task.sleep(for: .milliseconds(200))
        }
        // Events are awaited, not polled: a spinning waiter would take one of the two cores.
        var reported: [Double] = []
        var device: MediaOutputDevice?
        var extensionForPlay: UPnPRendererExtension?
        var routing = AsyncStream.makeStream(of: MediaDeviceRoutingEvent.self)
        for run in 0..<runs {
            routing = AsyncStream.makeStream(of: MediaDeviceRoutingEvent.self)
            let sink = routing.continuation
            let upnp = UPnPRendererExtension(
                transport: LANTransport(configuration: configuration), routingManager: MediaDeviceRoutingManager { sink.yield($0) },
                configuration: .init(usesEvents: ProcessInfo.processInfo.environment["UPNP_BENCH_NO_EVENTS"] == nil))
            let start = clock.now
            await upnp.startDeviceDiscovery()
            for await event in routing.stream {
                if case .foundDevice(let found) = event {
                    device = found
                    break
                }
            }
            reported.append(milliseconds(clock.now - start))
            if run == runs - 1 {
                extensionForPlay = upnp
            } else {
                await upnp.shutdown()
                try await Task.sleep(for: .milliseconds(200))
            }
        }

        // 2. SetAVTransportURI + Play → the renderer reports PLAYING (warm: the device is known).
        var play: [Double] = []
        if let upnp = extensionForPlay, let device {
            for _ in 0..<runs {
                let session = MediaOutputSession(deviceID: device.id)
                let start = clock.now
                await upnp.startSession(session, identifier: nil, url: URL(string: mediaURL)!)
                var control: PlaybackControl?
                for await event in routing.stream {
                    if case .started(_, let started, let which) = event, which == session {
                        control = started
                        break
                    }
                    if case .sessionFailed = event { break }
                }
                if let control {
                    for await snapshot in control.changes() where snapshot.state == .playing { break }
                    play.append(milliseconds(clock.now - start))
                }
                try await Task.sleep(for: .seconds(1))
                await upnp.stopSession(session)
                try await Task.sleep(for: .milliseconds(700))
            }
            await upnp.shutdown()
        }

        // 2b. The wire: curl's own time for SetAVTransportURI, Play and GetTransportInfo.
        var wire: [Double] = []
        let control = "http://\(room.deviceAddress):49494/upnp/control/rendertransport1"
        func curl(_ action: String, _ arguments: String) async throws -> Double {
            let body = #"<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body>"#
                + #"<u:\#(action) xmlns:u="urn:schemas-upnp-org:service:AVTransport:1"><InstanceID>0</InstanceID>\#(arguments)</u:\#(action)></s:Body></s:Envelope>"#
            let (_, output) = try await ChildProcess.runOffPool([
                "/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{time_total}", "-H", "Content-Type: text/xml",
                "-H", "SOAPACTION: \"urn:schemas-upnp-org:service:AVTransport:1#\(action)\"", "-d", body, control,
            ])
            return (Double(output) ?? .nan) * 1000
        }
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/curl") {
            for _ in 0..<runs {
                var total = try await curl("SetAVTransportURI", "<CurrentURI>\(mediaURL)</CurrentURI><CurrentURIMetaData></CurrentURIMetaData>")
                total += try await curl("Play", "<Speed>1</Speed>")
                total += try await curl("GetTransportInfo", "")
                wire.append(total)
                try await Task.sleep(for: .seconds(1))
                _ = try await curl("Stop", "")
                try await Task.sleep(for: .milliseconds(700))
            }
        }

        // 3. gssdp-discover: process start → first renderer line.
        var gssdp: [Double] = []
        for _ in 0..<runs {
            let start = clock.now
            let collector = try LineCollector(
                ["/usr/bin/gssdp-discover", "-i", room.outside, "-t", "urn:schemas-upnp-org:device:MediaRenderer:1", "-n", "2"], environment: [:])
            while collector.first(after: start, where: { $0.contains("Location:") }) == nil && clock.now - start < .seconds(3) {
                try await Task.sleep(for: .milliseconds(1))
            }
            if let (at, _) = collector.first(after: start, where: { $0.contains("Location:") }) { gssdp.append(milliseconds(at - start)) }
            collector.stop()
            try await Task.sleep(for: .milliseconds(200))
        }

        // 4. async_upnp_client in one warm process.
        let (status, output) = try await ChildProcess.runOffPool([python, "Benchmarks/upnp_peer.py", room.hostAddress, String(runs), mediaURL])
        struct Peer: Decodable {
            var first_reply: [Double]
            var device_built: [Double]
            var play: [Double]
            var peak_rss_kib: Int
        }
        let peer = status == 0 ? try? JSONDecoder().decode(Peer.self, from: Data((output.split(separator: "\n").last ?? "").utf8)) : nil
        if peer == nil { print("async_upnp_client failed (\(status)): \(output.suffix(400))") }

        // 5. Resident memory of a discovering process.
        let ourRSS = FileManager.default.isExecutableFile(atPath: mediaroutectl)
            ? try await peakRSS([mediaroutectl, "devices", "--lan-interface", room.outside, "--seconds", "2"]) : 0

        print("runs: \(runs) each; medians in ms (all runs listed)")
        print("| measure | MediaRoute | async_upnp_client | gssdp-discover | ratio (peer / MediaRoute) |")
        print("|---|---|---|---|---|")
        print("| M-SEARCH → first answer | \(format(median(firstReply), 2)) (\(list(firstReply))) | \(peer.map { format(median($0.first_reply), 2) } ?? "–") | \(format(median(gssdp), 1)) process start → line (\(list(gssdp))) | \(peer.map { format(median($0.first_reply) / median(firstReply), 1) } ?? "–") |")
        print("| discovery start → renderer reported, description parsed | \(format(median(reported), 2)) (\(list(reported))) | \(peer.map { format(median($0.device_built), 2) + " (" + list($0.device_built) + ")" } ?? "–") | – | \(peer.map { format(median($0.device_built) / median(reported), 1) } ?? "–") |")
        print("| SetAVTransportURI + Play → PLAYING | \(format(median(play), 2)) (\(list(play))) | \(peer.map { format(median($0.play), 2) + " (" + list($0.play) + ")" } ?? "–") | – | \(peer.map { format(median($0.play) / median(play), 1) } ?? "–") |")
        print("| the wire: curl's time for SetAVTransportURI, Play, GetTransportInfo | \(format(median(wire), 2)) (\(list(wire))) | | | |")
        print("| peak RSS of the discovering process | \(ourRSS / 1024) MB (`mediaroutectl devices --lan-interface`) | \(peer.map { "\($0.peak_rss_kib / 1024) MB" } ?? "–") | – | \(peer.map { ourRSS > 0 ? format(Double($0.peak_rss_kib) / Double(ourRSS), 1) : "–" } ?? "–") |")
        await server.close()
    }
}

extension Bench {
    /// Requests per connection to one URL with our client (for profiling against curl).
    static func http(host: String, port: UInt16, path: String) async throws {
        let client = LANHTTPClient()
        let clock = ContinuousClock()
        var times: [Double] = []
        for _ in 0..<50 {
            let start = clock.now
            _ = try await client.request("GET", host: host, port: port, path: path)
            times.append(milliseconds(clock.now - start))
        }
        print("GET http://\(host):\(port)\(path): median \(format(median(times), 3)) ms (\(list(Array(times.prefix(10)))))")
    }
}
