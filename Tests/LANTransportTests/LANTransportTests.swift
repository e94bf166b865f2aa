import Coordination
import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import LANTransport
import Logging
import MediaClock
import MediaRouteTestSupport
import Testing
import Transport
import UPnPRendererExtension

@Suite struct SSDPMessageTests {
    let answer = """
        HTTP/1.1 200 OK\r
        CACHE-CONTROL: max-age=100\r
        EXT:\r
        LOCATION: http://198.51.100.2:49494/description.xml\r
        SERVER: Linux/6.1 UPnP/1.0 libupnp/1.8.4\r
        ST: urn:schemas-upnp-org:device:MediaRenderer:1\r
        USN: uuid:11111111-2222-3333-4444-555555555555::urn:schemas-upnp-org:device:MediaRenderer:1\r
        \r

        """

    @Test func readsASearchAnswer() throws {
        let message = try SSDPMessage.parse(Array(answer.utf8))
        #expect(message.kind == .searchResponse)
        #expect(message.maxAge == 100)
        #expect(message.udn == "uuid:11111111-2222-3333-4444-555555555555")
        #expect(message.target == "urn:schemas-upnp-org:device:MediaRenderer:1")
        #expect(message["location"] == "http://198.51.100.2:49494/description.xml")
        #expect(message["EXT"] == "")
    }

    @Test func readsNotifyWithOddSpacingAndBareNewlines() throws {
        let notify = "NOTIFY * HTTP/1.1\nHost:239.255.255.250:1900\nnt:   upnp:rootdevice \nNTS: ssdp:byebye\nUSN: uuid:abc::upnp:rootdevice\ncache-control: no-cache, max-age = 30\n\n"
        let message = try SSDPMessage.parse(Array(notify.utf8))
        #expect(message.kind == .notify && message.notificationSubtype == "ssdp:byebye" && message.target == "upnp:rootdevice")
        #expect(message.udn == "uuid:abc" && message.maxAge == 30)
    }

    @Test func malformedDatagramsAreTypedErrors() {
        let bad: [[UInt8]] = [
            [], Array("GET / HTTP/1.1\r\n\r\n".utf8), Array("HTTP/1.1 200 OK\r\nST: x\r\n".utf8),  // unterminated
            Array("HTTP/1.1 200 OK\r\n: novalue\r\n\r\n".utf8), Array("HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n".utf8),
            Array("HTTP/1.1 200 OK\r\nST: a\0b\r\n\r\n".utf8), [UInt8](repeating: 0x41, count: 9000),
            Array(("HTTP/1.1 200 OK\r\n" + (0..<65).map { "H\($0): v\r\n" }.joined() + "\r\n").utf8),
        ]
        for bytes in bad {
            #expect { try SSDPMessage.parse(bytes) } throws: { ($0 as? TransportError)?.code == .malformedMessage }
        }
        // Values that parse but are unusable are nil, not errors.
        let odd = try? SSDPMessage.parse(Array("HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=-5\r\nUSN: not-a-uuid\r\n\r\n".utf8))
        #expect(odd?.maxAge == nil && odd?.udn == nil)
        let capped = try? SSDPMessage.parse(Array("HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=99999999\r\n\r\n".utf8))
        #expect(capped?.maxAge == 86_400)
    }

    @Test func everyPrefixAndRandomBytesAreHandled() {
        let bytes = Array(answer.utf8)
        for length in 0..<bytes.count { _ = try? SSDPMessage.parse(Array(bytes.prefix(length))) }
        var generator = SplitMix64(seed: 7)
        let alphabet = Array("HTTP/1.1 200OK\r\n:NOTIFY*-=,max-ageuuid:LOCATION".utf8) + [0, 0xFF, 0xC3]
        for _ in 0..<3000 {
            let count = Int.random(in: 0..<300, using: &generator)
            _ = try? SSDPMessage.parse((0..<count).map { _ in alphabet.randomElement(using: &generator)! })
        }
    }
}

/// A TCP server on loopback that answers each connection with scripted bytes (or silence).
///
/// Its thread owns the listening socket and closes it when it is done; `deinit`
/// only shuts it down (ending a blocked `accept`), under the same lock. Closing
/// it from `deinit` let the socket's number be reused by another test's server
/// while this thread was still draining a client, and its next `accept` then
/// took that server's connection and answered it with this script.
final class ScriptedServer: Sendable {
    let port: UInt16
    private let fd: Int32
    /// Whether the thread has closed `fd` (after which its number may belong to anything).
    private let closed = Locked(false)
    let accepted = Locked(0)

    /// - Parameters:
    ///   - answerDelay: how long the server takes over each answer once the request came.
    ///   - closesAfterAnswering: false: the connection stays open after the answer until the client closes it.
    init(answers: [[UInt8]?], answerDelay: Duration = .zero, closesAfterAnswering: Bool = true) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        listen(fd, 8)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        self.fd = fd
        port = UInt16(bigEndian: address.sin_port)
        let accepted = self.accepted
        let closed = self.closed
        Thread.detachNewThread {
            defer { closed.withLock { $0 = true; close(fd) } }
            for answer in answers {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                accepted.withLock { $0 += 1 }
                var buffer = [UInt8](repeating: 0, count: 4096)
                _ = read(client, &buffer, buffer.count)
                if let answer {
                    if answerDelay > .zero { Thread.sleep(forTimeInterval: Double(answerDelay.components.seconds) + Double(answerDelay.components.attoseconds) / 1e18) }
                    _ = answer.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                    // FIN, then drain: closing with unread request bytes would send a RST instead.
                    if closesAfterAnswering {
                        shutdown(client, Int32(SHUT_WR))
                        var timeout = timeval(tv_sec: 1, tv_usec: 0)
                        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                    }
                    // Held open: until the client closes (or the server is shut down), however
                    // long a loaded machine takes to get there.
                    while read(client, &buffer, buffer.count) > 0 {}
                    close(client)
                } else {
                    Thread.sleep(forTimeInterval: 3)  // silence: the client must time out
                    close(client)
                }
            }
        }
    }

    deinit {
        let fd = fd
        closed.withLock { if !$0 { shutdown(fd, Int32(SHUT_RDWR)) } }
    }
}

/// What a TCP connection to a device tells about the link beneath the protocol.
@Suite struct LANConnectionTests {
    /// The least round trip is the network's (the kernel's minimum RTT, answered by the peer's
    /// network stack), not the time the device took to answer a request: a server that answers
    /// 100 ms late is still well under 10 ms away on loopback.
    @Test func theLeastRoundTripIsTheNetworksNotTheDevicesAnswer() async throws {
        let server = try ScriptedServer(answers: [Array("late".utf8)], answerDelay: .milliseconds(100), closesAfterAnswering: false)
        let endpoint = Endpoint(id: "slow-answers", transport: "lan", address: .ip(host: "127.0.0.1", port: server.port, interface: "lo"))
        let connection = try await LANConnection.connect(to: endpoint, host: "127.0.0.1", port: Int(server.port), timeout: .seconds(5), logger: Logger(label: "test"))
        let stream = try #require(connection.byteStream)
        let sent = ContinuousClock.now
        try await stream.write(Array("ask".utf8))
        var answer: [UInt8] = []
        for try await chunk in stream.incoming {
            answer += chunk
            if answer.count >= 4 { break }
        }
        let requestRoundTrip = ContinuousClock.now - sent
        #expect(answer == Array("late".utf8) && requestRoundTrip >= .milliseconds(100))
        let least = try #require(await stream.leastRoundTrip(), "Linux reports TCP's minimum round trip")
        #expect(least > .zero && least < .milliseconds(10), "\(least) for a request answered in \(requestRoundTrip)")
        await connection.close()
        #expect(await stream.leastRoundTrip() == nil, "a closed connection has none")
    }
}

@Suite struct LANHTTPClientTests {
    let client = LANHTTPClient()
    let limits = HTTPLimits(maximumBodyBytes: 1024, timeout: .milliseconds(500), maximumRedirects: 1)

    func code(_ answer: String, limits: HTTPLimits? = nil) async throws -> TransportError.Code? {
        let server = try ScriptedServer(answers: [Array(answer.utf8)])
        do {
            _ = try await client.request("GET", host: "127.0.0.1", port: server.port, path: "/", limits: limits ?? self.limits)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func readsAnAnswerWithinTheLimits() async throws {
        let server = try ScriptedServer(answers: [Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\n\r\nhello".utf8)])
        let response = try await client.request("GET", host: "127.0.0.1", port: server.port, path: "/", limits: limits)
        #expect(response.status == 200 && response.body == Array("hello".utf8) && response[header: "x-a"] == "1")
    }

    @Test func hostileAnswersAreTypedErrors() async throws {
        #expect(try await code("HTTP/1.1 200 OK\r\nContent-Length: 999999\r\n\r\nx") == .malformedMessage, "declared too long")
        let chunk = String(repeating: "y", count: 800)
        #expect(try await code("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n320\r\n\(chunk)\r\n320\r\n\(chunk)\r\n0\r\n\r\n") == .malformedMessage, "grows too long")
        #expect(try await code("SPDY/9 what\r\n\r\n") == .malformedMessage, "not HTTP")
        #expect(try await code("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort") == .connectionLost, "closed mid-body")
        #expect(try await code("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nshortened-later")  == nil)
    }

    @Test func silenceTimesOut() async throws {
        let server = try ScriptedServer(answers: [nil])
        let start = ContinuousClock.now
        await #expect { try await client.request("GET", host: "127.0.0.1", port: server.port, path: "/", limits: limits) } throws: {
            ($0 as? TransportError)?.code == .timedOut
        }
        #expect(ContinuousClock.now - start < .seconds(2))
    }

    @Test func refusedConnectionsAreTyped() async throws {
        let port = try ScriptedServer(answers: []).port  // closed again at once
        await #expect { try await client.request("GET", host: "127.0.0.1", port: port, path: "/", limits: limits) } throws: {
            [.connectionRefused, .unreachable].contains(($0 as? TransportError)?.code)
        }
    }

    @Test func redirectsStayOnTheHost() async throws {
        let elsewhere = try ScriptedServer(answers: [Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".utf8)])
        let server = try ScriptedServer(answers: [Array("HTTP/1.1 302 Found\r\nLocation: http://127.0.0.2:\(elsewhere.port)/x\r\nContent-Length: 0\r\n\r\n".utf8)])
        await #expect { try await client.request("GET", host: "127.0.0.1", port: server.port, path: "/", limits: limits) } throws: {
            ($0 as? TransportError)?.code == .malformedMessage
        }
        #expect(elsewhere.accepted.value == 0, "no request to the other host")
        let same = try ScriptedServer(answers: [
            Array("HTTP/1.1 301 Moved\r\nLocation: /real\r\nContent-Length: 0\r\n\r\n".utf8), Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8),
        ])
        let response = try await client.request("GET", host: "127.0.0.1", port: same.port, path: "/", limits: limits)
        #expect(response.body == Array("ok".utf8))
        let loop = try ScriptedServer(answers: Array(repeating: Array("HTTP/1.1 302 Found\r\nLocation: /again\r\nContent-Length: 0\r\n\r\n".utf8), count: 3))
        await #expect { try await client.request("GET", host: "127.0.0.1", port: loop.port, path: "/", limits: limits) } throws: {
            ($0 as? TransportError)?.code == .malformedMessage
        }
    }

    @Test func fetchRefusesURLsOffTheEndpointsHost() async throws {
        let elsewhere = try ScriptedServer(answers: [Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".utf8)])
        let transport = LANTransport()
        let endpoint = Endpoint(id: "uuid:x", transport: "lan", address: .ip(host: "127.0.0.2", port: 80, interface: "lo"))
        await #expect { try await transport.fetch("GET", "http://127.0.0.1:\(elsewhere.port)/", for: endpoint) } throws: {
            ($0 as? TransportError)?.code == .unreachable
        }
        #expect(elsewhere.accepted.value == 0)
    }
}

@Suite(.serialized, .timeLimit(.minutes(1)), .enabled(if: NamespaceLab.isAvailable))
struct SSDPAnnouncementTests {
    /// Inside the room: an HTTP server with a hostile description, and NOTIFYs every 200 ms,
    /// one pointing at another host (our side of the veth), one at itself.
    static func announcer(room: NamespaceLab.Room, otherPort: UInt16) -> String {
        """
        import socket, threading, time, http.server
        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                print("GET", self.path, flush=True)
                body = b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]><root xmlns="urn:schemas-upnp-org:device-1-0">&b;</root>'
                self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
            def log_message(self, *a): pass
        server = http.server.HTTPServer(("\(room.deviceAddress)", 8080), H)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("\(room.deviceAddress)"))
        def notify(uuid, location):
            return ("NOTIFY * HTTP/1.1\\r\\nHOST: 239.255.255.250:1900\\r\\nCACHE-CONTROL: max-age=60\\r\\nLOCATION: " + location +
                    "\\r\\nNT: urn:schemas-upnp-org:device:MediaRenderer:1\\r\\nNTS: ssdp:alive\\r\\nUSN: uuid:" + uuid +
                    "::urn:schemas-upnp-org:device:MediaRenderer:1\\r\\n\\r\\n").encode()
        print("ready", flush=True)
        for _ in range(50):
            s.sendto(notify("elsewhere", "http://\(room.hostAddress):\(otherPort)/description.xml"), ("239.255.255.250", 1900))
            s.sendto(notify("hostile", "http://\(room.deviceAddress):8080/description.xml"), ("239.255.255.250", 1900))
            time.sleep(0.2)
        """
    }

    @Test func aLocationOnAnotherHostIsNeverFetchedAndAHostileDescriptionIsRefused() async throws {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        // Stands for "another host": if discovery followed the announcement, it would connect here.
        let other = try ScriptedServer(answers: [Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".utf8)])
        let transport = LANTransport(configuration: .init(interfaces: [room.outside]))
        let events = Locked<[DiscoveryEvent]>([])
        let follower = Task { for await event in transport.discover() { events.withLock { $0.append(event) } } }
        defer { follower.cancel() }
        try await Task.sleep(for: .milliseconds(200))
        try lab.start(in: room, ["/usr/bin/python3", "-u", "-c", Self.announcer(room: room, otherPort: other.port)], log: "announcer.log")
        // The self-hosted one is an endpoint (its description is the extension's business) …
        #expect(await eventually { events.value.contains { if case .appeared(let endpoint) = $0 { endpoint.id == "uuid:hostile" } else { false } } })
        try await Task.sleep(for: .seconds(1))
        // … the one pointing elsewhere is dropped before any request.
        #expect(!events.value.contains { if case .appeared(let endpoint) = $0 { endpoint.id == "uuid:elsewhere" } else { false } })
        #expect(other.accepted.value == 0)

        // The extension fetches the hostile description from the device itself, refuses it, reports nothing.
        let log = RoutingLog()
        let upnp = UPnPRendererExtension(transport: LANTransport(configuration: .init(interfaces: [room.outside])), routingManager: log.manager)
        await upnp.startDeviceDiscovery()
        #expect(await eventually { lab.log("announcer.log").contains("GET /description.xml") })
        try await Task.sleep(for: .milliseconds(500))
        #expect(log.events.value.isEmpty, "\(log.events.value)")
        #expect(other.accepted.value == 0)
        await upnp.shutdown()
    }

    /// Discovery on the room's outside interface, every event recorded; searches far apart,
    /// so that what the test's device announces is all there is.
    func follow(_ room: NamespaceLab.Room, clock: any HostClock = SystemHostClock()) async throws -> (events: Locked<[DiscoveryEvent]>, follower: Task<Void, Never>) {
        let transport = LANTransport(configuration: .init(interfaces: [room.outside], initialSearchInterval: .seconds(600)), clock: clock)
        let events = Locked<[DiscoveryEvent]>([])
        let follower = Task { for await event in transport.discover() { events.withLock { $0.append(event) } } }
        try await Task.sleep(for: .milliseconds(200))
        return (events, follower)
    }

    /// A Python script for the room's device: `send(nts)` multicasts a MediaRenderer
    /// NOTIFY for `udn` with max-age=60, then `steps` run.
    func notifyScript(_ room: NamespaceLab.Room, udn: String, steps: String) -> String {
        """
        import socket, time
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("\(room.deviceAddress)"))
        def send(nts):
            s.sendto(("NOTIFY * HTTP/1.1\\r\\nHOST: 239.255.255.250:1900\\r\\nCACHE-CONTROL: max-age=60\\r\\nLOCATION: http://\(room.deviceAddress):80/d.xml"
                      "\\r\\nNT: urn:schemas-upnp-org:device:MediaRenderer:1\\r\\nNTS: " + nts + "\\r\\nUSN: \(udn)::urn:schemas-upnp-org:device:MediaRenderer:1\\r\\n\\r\\n").encode(),
                     ("239.255.255.250", 1900))
        \(steps)
        print("done", flush=True)
        """
    }

    @Test func byebyeThenAliveKeepsTheDeviceAndByebyeAloneRemovesIt() async throws {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        let (events, follower) = try await follow(room)
        defer { follower.cancel() }
        let steps = """
            send("ssdp:alive"); time.sleep(0.5)
            send("ssdp:byebye"); time.sleep(0.05); send("ssdp:alive")     # a GUPnP device starting again
            time.sleep(1.5)
            send("ssdp:byebye")                                              # and now leaving
            """
        try lab.start(in: room, ["/usr/bin/python3", "-u", "-c", notifyScript(room, udn: "uuid:restart", steps: steps)], log: "restart.log")
        #expect(await eventually { events.value.contains { if case .appeared = $0 { true } else { false } } })
        try await Task.sleep(for: .seconds(1.5))
        #expect(!events.value.contains(.lost(endpointID: "uuid:restart")), "byebye followed by alive is a restart, not a loss")
        #expect(await eventually(timeout: .seconds(3)) { events.value.contains(.lost(endpointID: "uuid:restart")) }, "\(lab.log("restart.log"))")
    }

    /// Expiry runs on the injected clock: a device announced with max-age=60 is kept
    /// until 60 s of that clock have passed, and no longer, with no real waiting.
    @Test func maxAgeExpiresOnTheInjectedClock() async throws {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        let clock = ManualHostClock()
        let (events, follower) = try await follow(room, clock: clock)
        defer { follower.cancel() }
        try lab.start(in: room, ["/usr/bin/python3", "-u", "-c", notifyScript(room, udn: "uuid:aging", steps: "send(\"ssdp:alive\")")], log: "aging.log")
        #expect(await eventually { events.value.contains { if case .appeared = $0 { true } else { false } } }, "\(lab.log("aging.log"))")
        clock.advance(by: .seconds(59))
        try await Task.sleep(for: .milliseconds(100))
        #expect(!events.value.contains(.lost(endpointID: "uuid:aging")), "still within its max-age")
        clock.advance(by: .seconds(2))
        #expect(await eventually { events.value.contains(.lost(endpointID: "uuid:aging")) }, "max-age passed on the injected clock")
    }

    /// Made-up devices from four addresses: one host gets its datagram budget (a burst of 200),
    /// all of them together no more than the table (512).
    @Test func aFloodOfMadeUpDevicesIsBounded() async throws {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        let prefix = room.deviceAddress.split(separator: ".").dropLast().joined(separator: ".")
        let sources = (0..<4).map { "\(prefix).\(70 + $0)" }
        for source in sources { try NamespaceLab.ip(["-n", room.namespace, "addr", "add", "\(source)/24", "dev", room.inside]) }
        let transport = LANTransport(configuration: .init(interfaces: [room.outside], initialSearchInterval: .seconds(60)))
        let appeared = Locked<[String: Int]>([:])
        let follower = Task {
            for await event in transport.discover() {
                if case .appeared(let endpoint) = event { appeared.withLock { $0[endpoint.host ?? "", default: 0] += 1 } }
            }
        }
        defer { follower.cancel() }
        try await Task.sleep(for: .milliseconds(200))
        let script = """
            import socket, sys, time
            source = sys.argv[1]
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((source, 0))
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(source))
            for i in range(700):
                s.sendto(("NOTIFY * HTTP/1.1\\r\\nHOST: 239.255.255.250:1900\\r\\nCACHE-CONTROL: max-age=60\\r\\nLOCATION: http://" + source + ":80/d.xml"
                          "\\r\\nNT: urn:schemas-upnp-org:device:MediaRenderer:1\\r\\nNTS: ssdp:alive\\r\\nUSN: uuid:flood-%s-%d\\r\\n\\r\\n" % (source, i)).encode(),
                         ("239.255.255.250", 1900))
                if i % 50 == 0: time.sleep(0.01)
            print("sent", flush=True)
            """
        let first = try lab.start(in: room, ["/usr/bin/python3", "-u", "-c", script, sources[0]], log: "flood0.log")
        _ = first.wait()
        try await Task.sleep(for: .milliseconds(300))
        // One source: its burst and what its rate refilled meanwhile, far from 700.
        let one = appeared.value[sources[0]] ?? 0
        #expect(one >= 150 && one <= 260, "one source made \(one) devices")
        for (index, source) in sources.dropFirst().enumerated() {
            try lab.start(in: room, ["/usr/bin/python3", "-u", "-c", script, source], log: "flood\(index + 1).log")
        }
        #expect(await eventually { appeared.value.values.reduce(0, +) >= 512 })
        try await Task.sleep(for: .milliseconds(500))
        #expect(appeared.value.values.reduce(0, +) == 512, "the table stops at 512 devices: \(appeared.value)")
    }

    /// A device's identity stays with the address it was learned at: another host's byebye is
    /// ignored, and its announcement of the same UDN moves nothing while the device still answers
    /// at its own address; once it no longer does (a device that really changed address), the
    /// device moves.
    @Test func anotherHostCanNeitherRemoveNorMoveADevice() async throws {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        let prefix = room.deviceAddress.split(separator: ".").dropLast().joined(separator: ".")
        let attacker = "\(prefix).66"
        try NamespaceLab.ip(["-n", room.namespace, "addr", "add", "\(attacker)/24", "dev", room.inside])
        let clock = ManualHostClock()
        let (events, follower) = try await follow(room, clock: clock)
        defer { follower.cancel() }
        func announce(from source: String, _ nts: String...) -> String {
            """
            import socket, time
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("\(source)", 0))
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("\(source)"))
            for nts in \(nts.map { "\"\($0)\"" }):
                s.sendto(("NOTIFY * HTTP/1.1\\r\\nHOST: 239.255.255.250:1900\\r\\nCACHE-CONTROL: max-age=1800\\r\\nLOCATION: http://\(source):8080/d.xml"
                          "\\r\\nNT: urn:schemas-upnp-org:device:MediaRenderer:1\\r\\nNTS: " + nts + "\\r\\nUSN: uuid:tv::urn:schemas-upnp-org:device:MediaRenderer:1\\r\\n\\r\\n").encode(),
                         ("239.255.255.250", 1900))
                time.sleep(0.05)
            print("sent", flush=True)
            """
        }
        // The real TV: answers HTTP at its address.
        let tv = try lab.start(in: room, ["/usr/bin/python3", "-u", "-c", """
            import http.server
            class H(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    print("GET", self.path, flush=True)
                    self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
                def log_message(self, *a): pass
            print("ready", flush=True)
            http.server.HTTPServer(("\(room.deviceAddress)", 8080), H).serve_forever()
            """], log: "tv.log")
        defer { tv.kill(); _ = tv.wait() }
        #expect(await eventually { lab.log("tv.log").contains("ready") })
        _ = try lab.start(in: room, ["/usr/bin/python3", "-u", "-c", announce(from: room.deviceAddress, "ssdp:alive")], log: "alive.log").wait()
        #expect(await eventually { events.value.contains { if case .appeared(let endpoint) = $0 { endpoint.host == room.deviceAddress } else { false } } })

        // The attacker says the TV left, and that it is now at the attacker's address.
        _ = try lab.start(in: room, ["/usr/bin/python3", "-u", "-c", announce(from: attacker, "ssdp:byebye", "ssdp:alive", "ssdp:alive")], log: "attack.log").wait()
        // The TV was asked whether it still answers, and it does: nothing moved or went.
        #expect(await eventually { lab.log("tv.log").contains("GET /d.xml") })
        try await Task.sleep(for: .milliseconds(300))
        clock.advance(by: .seconds(2))  // past the byebye grace
        try await Task.sleep(for: .milliseconds(300))
        #expect(events.value.count == 1, "\(events.value)")

        // The TV goes (its address answers no more), then is announced from the new address: it moves.
        tv.kill()
        _ = tv.wait()
        clock.advance(by: .seconds(31))  // one check per device every 30 s
        _ = try lab.start(in: room, ["/usr/bin/python3", "-u", "-c", announce(from: attacker, "ssdp:alive")], log: "moved.log").wait()
        #expect(await eventually {
            events.value.contains { if case .updated(let endpoint) = $0 { endpoint.host == attacker } else { false } }
        }, "\(events.value)")
        #expect(!events.value.contains(.lost(endpointID: "uuid:tv")))
    }
}
