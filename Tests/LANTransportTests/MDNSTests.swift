import Coordination
import Foundation
import LANTransport
import MediaRouteTestSupport
import Testing
import Transport

@Suite struct DNSMessageTests {
    let response = DNSMessage(
        isResponse: true,
        answers: [DNSRecord(name: "_airplay._tcp.local", ttl: 4500, data: .ptr("Living Room._airplay._tcp.local"))],
        additionals: [
            DNSRecord(name: "Living Room._airplay._tcp.local", ttl: 120, data: .srv(priority: 0, weight: 0, port: 7000, target: "lr.local"), cacheFlush: true),
            DNSRecord(name: "Living Room._airplay._tcp.local", ttl: 4500, data: .txt(["model=AppleTV3,2", "flag"]), cacheFlush: true),
            DNSRecord(name: "lr.local", ttl: 120, data: .a("198.51.100.7"), cacheFlush: true),
            DNSRecord(name: "lr.local", ttl: 120, data: .aaaa("fe80::1:2"), cacheFlush: true),
        ])

    @Test func roundTrips() throws {
        let decoded = try DNSMessage.decode(response.encoded())
        #expect(decoded.isResponse)
        #expect(Array(decoded.records.map(\.data).prefix(4)) == Array(response.records.map(\.data).prefix(4)))
        #expect(decoded.additionals.allSatisfy(\.cacheFlush) && !decoded.answers[0].cacheFlush)
        #expect(decoded.additionals[3].data == .aaaa("fe80:0:0:0:0:0:1:2"))
        let query = DNSMessage(isResponse: false, questions: [DNSQuestion(name: "_raop._tcp.local", type: .ptr, unicastResponse: true)])
        #expect(try DNSMessage.decode(query.encoded()).questions == query.questions)
    }

    /// Regression: the three record counts were summed in 16-bit arithmetic, so one
    /// datagram from anyone on the LAN trapped the decoder (and took the daemon down).
    @Test func recordCountsThatOverflowSixteenBitsAreRefusedNotTrapped() {
        for counts in [[0xFFFF, 0xFFFF, 0xFFFF], [0x8000, 0x8000, 0], [0, 0xFFFF, 1], [1, 1, 0xFFFF]] {
            var bytes: [UInt8] = [0, 0, 0x84, 0, 0xFF, 0xFF]
            for count in counts { bytes += [UInt8(count >> 8), UInt8(count & 0xFF)] }
            bytes += [UInt8](repeating: 0, count: 64)
            #expect { try DNSMessage.decode(bytes) } throws: { ($0 as? TransportError)?.code == .malformedMessage }
        }
    }

    @Test func followsCompressionPointersButNotLoops() throws {
        // Header: response, 0 questions, 2 answers. Name "a.local" at 12; the second record's name points at it.
        var bytes: [UInt8] = [0, 0, 0x84, 0, 0, 0, 0, 2, 0, 0, 0, 0]
        bytes += [1, 0x61, 5] + Array("local".utf8) + [0] + [0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 0, 0, 1]
        bytes += [0xC0, 12] + [0, 12, 0, 1, 0, 0, 0, 60, 0, 2, 0xC0, 12]
        let message = try DNSMessage.decode(bytes)
        #expect(message.answers.map(\.name) == ["a.local", "a.local"])
        #expect(message.answers[1].data == .ptr("a.local"))
        // A pointer to itself, and a pointer forward: refused.
        var loop: [UInt8] = [0, 0, 0x84, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4]
        #expect { try DNSMessage.decode(loop) } throws: { ($0 as? TransportError)?.code == .malformedMessage }
        loop[13] = 20
        #expect { try DNSMessage.decode(loop) } throws: { ($0 as? TransportError)?.code == .malformedMessage }
    }

    @Test func truncationsAndLiesAreTypedErrors() {
        let bytes = response.encoded()
        for length in 0..<bytes.count {
            #expect { try DNSMessage.decode(Array(bytes.prefix(length))) } throws: { ($0 as? TransportError)?.code == .malformedMessage }
        }
        // Counts far beyond what the datagram holds.
        #expect(throws: TransportError.self) { try DNSMessage.decode([0, 0, 0x84, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0]) }
        // An A record of 5 bytes.
        var wrong = DNSMessage(isResponse: true, answers: [DNSRecord(name: "x.local", ttl: 1, data: .other(type: 1, bytes: [1, 2, 3, 4, 5]))]).encoded()
        #expect(throws: TransportError.self) { try DNSMessage.decode(wrong) }
        // A name over 255 bytes.
        wrong = DNSMessage(isResponse: true, answers: [DNSRecord(name: Array(repeating: String(repeating: "a", count: 60), count: 5).joined(separator: "."), ttl: 1, data: .a("1.2.3.4"))]).encoded()
        #expect(throws: TransportError.self) { try DNSMessage.decode(wrong) }
        var generator = SplitMix64(seed: 99)
        for _ in 0..<3000 {
            var mutated = bytes
            for _ in 0..<3 { mutated[Int.random(in: 0..<mutated.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            _ = try? DNSMessage.decode(mutated)
        }
    }
}

/// Python that opens `s`, an mDNS socket in the room (port 5353, the group joined, sending on
/// the room's address), and defines `name(n)`, a DNS name's wire form.
func mdnsSocket(_ room: NamespaceLab.Room) -> String {
    """
    import socket, struct, time
    ip = "\(room.deviceAddress)"
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 5353))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton("224.0.0.251") + socket.inet_aton(ip))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(ip))
    def name(n): return b"".join(bytes([len(l)]) + l.encode() for l in n.split(".")) + b"\\0"
    """
}

/// Python after ``mdnsSocket(_:)``: `rr(…)`, a record's wire form, and `read_query(data)`, a
/// query's questions as (name, type) and its known answers as (type, ttl, rdata), or None for a response.
let mdnsQueryReader = """
    def rr(n, t, ttl, data, flush=False): return name(n) + struct.pack(">HHIH", t, 0x8001 if flush else 1, ttl, len(data)) + data
    def read_name(b, o):
        labels = []
        while b[o]: labels.append(b[o+1:o+1+b[o]].decode()); o += 1 + b[o]
        return ".".join(labels), o + 1
    def read_query(data):
        flags, qd, an = struct.unpack(">HHH", data[2:8])
        if flags & 0x8000: return None
        o, qs, known = 12, [], []
        for _ in range(qd):
            n, o = read_name(data, o); qs.append((n, struct.unpack(">H", data[o:o+2])[0])); o += 4
        for _ in range(an):
            n, o = read_name(data, o); t, c, ttl, l = struct.unpack(">HHIH", data[o:o+10]); o += 10
            known.append((t, ttl, data[o:o+l])); o += l
        return qs, known
    """

@Suite(.serialized, .timeLimit(.minutes(1)), .enabled(if: NamespaceLab.isAvailable))
struct MDNSBrowsingTests {
    /// A minimal DNS-SD responder inside the room: answers PTR queries for `_airplay._tcp`
    /// unless the query already knows the answer, then says goodbye.
    static func responder(_ room: NamespaceLab.Room) -> String {
        """
        \(mdnsSocket(room))
        \(mdnsQueryReader)
        inst = "Lab Speaker._airplay._tcp.local"
        ptr = lambda ttl: rr("_airplay._tcp.local", 12, ttl, name(inst))
        srv = rr(inst, 33, 120, struct.pack(">HHH", 0, 0, 7000) + name("lab.local"), True)
        txt = rr(inst, 16, 4500, b"\\x0bmodel=Lab-1\\x05pk=ab", True)
        a = rr("lab.local", 1, 120, socket.inet_aton(ip), True)
        print("ready", flush=True)
        answered = False
        while True:
            data, sender = s.recvfrom(9000)
            query = read_query(data)
            if query is None: continue
            qs = query[0]
            known = sum(1 for t, ttl, rdata in query[1] if t == 12 and rdata == name(inst) and ttl > 2250)
            print("QUERY", qs, "known", known, flush=True)
            if ("_airplay._tcp.local", 12) not in qs: continue
            if known:
                print("SUPPRESSED", flush=True)
                time.sleep(0.3)
                s.sendto(struct.pack(">HHHHHH", 0, 0x8400, 0, 1, 0, 0) + ptr(0), ("224.0.0.251", 5353))
                print("GOODBYE", flush=True)
                continue
            s.sendto(struct.pack(">HHHHHH", 0, 0x8400, 0, 1, 0, 3) + ptr(4500) + srv + txt + a, ("224.0.0.251", 5353))
        """
    }

    /// A room running `responder` (Python, log `mdns.log`) and a browse of `types` from outside
    /// it, its events collected; cancel the task at the end.
    static func browsing(
        _ responder: (NamespaceLab.Room) -> String, types: [String]
    ) async throws -> (lab: NamespaceLab, room: NamespaceLab.Room, events: Locked<[DiscoveryEvent]>, follower: Task<Void, Never>) {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        try lab.start(in: room, ["/usr/bin/python3", "-u", "-c", responder(room)], log: "mdns.log")
        try await Task.sleep(for: .milliseconds(300))
        let transport = LANTransport(configuration: .init(interfaces: [room.outside]))
        let events = Locked<[DiscoveryEvent]>([])
        let follower = Task { for await event in transport.browse(serviceTypes: types) { events.withLock { $0.append(event) } } }
        return (lab, room, events, follower)
    }

    @Test func browsesResolvesSuppressesKnownAnswersAndHonoursGoodbye() async throws {
        let (lab, room, events, follower) = try await Self.browsing(Self.responder, types: ["_airplay._tcp", "_googlecast._tcp"])
        defer { follower.cancel() }
        #expect(await eventually { events.value.contains { if case .appeared = $0 { true } else { false } } }, "\(lab.log("mdns.log"))")
        let endpoint = try #require(events.value.lazy.compactMap { if case .appeared(let endpoint) = $0 { endpoint } else { nil } }.first)
        #expect(endpoint.id == "Lab Speaker._airplay._tcp.local")
        #expect(endpoint.address == .ip(host: room.deviceAddress, port: 7000, interface: room.outside))
        #expect(endpoint.attributes["model"] == "Lab-1" && endpoint.attributes["pk"] == "ab")
        #expect(endpoint.attributes["serviceType"] == "_airplay._tcp.local" && endpoint.facts.interfaceAddress == room.hostAddress)
        // The next query carries the PTR as a known answer, so the responder stays silent; then it says goodbye.
        #expect(await eventually(timeout: .seconds(4)) { lab.log("mdns.log").contains("SUPPRESSED") }, "\(lab.log("mdns.log"))")
        #expect(await eventually(timeout: .seconds(3)) { events.value.contains(.lost(endpointID: "Lab Speaker._airplay._tcp.local")) })
    }

    /// A responder whose SRV and address records live 3 s (avahi and Apple's give 120 s), that
    /// answers questions for each record by name and type and honours known-answer
    /// suppression: after the first answer only the browse's refresh queries keep them.
    static func shortLivedResponder(_ room: NamespaceLab.Room) -> String {
        """
        \(mdnsSocket(room))
        \(mdnsQueryReader)
        inst = "Brief Speaker._airplay._tcp.local"
        records = {("_airplay._tcp.local", 12): rr("_airplay._tcp.local", 12, 4500, name(inst)),
                   (inst, 33): rr(inst, 33, 3, struct.pack(">HHH", 0, 0, 7000) + name("brief.local"), True),
                   (inst, 16): rr(inst, 16, 4500, b"\\x0bmodel=Lab-2", True),
                   ("brief.local", 1): rr("brief.local", 1, 3, socket.inet_aton(ip), True)}
        print("ready", flush=True)
        while True:
            data, sender = s.recvfrom(9000)
            query = read_query(data)
            if query is None: continue
            qs = query[0]
            known = sum(1 for t, ttl, rdata in query[1] if t == 12)
            answers = [records[q] for q in qs if q in records and not (q[1] == 12 and known)]
            if ("_airplay._tcp.local", 12) in qs and not known: answers = list(records.values())
            print("QUERY", qs, "known", known, "answered", len(answers), flush=True)
            if answers: s.sendto(struct.pack(">HHHHHH", 0, 0x8400, 0, len(answers), 0, 0) + b"".join(answers), ("224.0.0.251", 5353))
        """
    }

    /// RFC 6762 §5.2: records in use are asked for again before their TTL runs out, so a
    /// device nobody else asks about is not lost in the middle of a stream (an AirPlay route
    /// ended two minutes in when avahi's 120 s SRV and address records ran out).
    @Test func recordsAreAskedForAgainBeforeTheyExpireSoTheDeviceStays() async throws {
        let (lab, _, events, follower) = try await Self.browsing(Self.shortLivedResponder, types: ["_airplay._tcp"])
        defer { follower.cancel() }
        #expect(await eventually { events.value.contains { if case .appeared = $0 { true } else { false } } }, "\(lab.log("mdns.log"))")
        // Four lifetimes of the short records.
        try await Task.sleep(for: .seconds(12))
        let lost = events.value.contains(.lost(endpointID: "Brief Speaker._airplay._tcp.local"))
        #expect(!lost, "\(lab.log("mdns.log"))")
        // The responder was asked for the SRV and the address by themselves, again and again.
        let refreshes = lab.log("mdns.log").split(separator: "\n").filter { $0.contains("('brief.local', 1)") && !$0.contains("answered 0") }
        #expect(refreshes.count >= 3, "\(lab.log("mdns.log"))")
    }
}

@Suite struct MDNSAdvertisementTests {
    let box = MDNSServiceAdvertisement(instance: "Kitchen.Box", serviceType: "_mediaroute._udp", port: 7391, txt: ["id=abc"], host: "mediaroute-abc")

    @Test func aQuestionForTheTypeIsAnsweredWithTheWholeService() throws {
        let query = DNSMessage(isResponse: false, questions: [DNSQuestion(name: "_MediaRoute._udp.local", type: .ptr)])
        let answer = try #require(box.answer(to: query, address: "198.51.100.4"))
        let decoded = try DNSMessage.decode(answer.encoded())
        #expect(decoded.isResponse)
        // A label holds no dot: the instance's became a dash.
        #expect(decoded.answers.map(\.data) == [.ptr("Kitchen-Box._mediaroute._udp.local")])
        #expect(decoded.additionals.map(\.data) == [
            .srv(priority: 0, weight: 0, port: 7391, target: "mediaroute-abc.local"), .txt(["id=abc"]), .a("198.51.100.4"),
        ])
        #expect(decoded.additionals.allSatisfy(\.cacheFlush) && !decoded.answers[0].cacheFlush)
    }

    @Test func knownAnswersOtherNamesAndResponsesAreNotAnswered() {
        let ptr = box.records(address: "198.51.100.4", ttl: 120).ptr
        var fresh = ptr
        fresh.ttl = 100
        let knowing = DNSMessage(isResponse: false, questions: [DNSQuestion(name: "_mediaroute._udp.local", type: .ptr)], answers: [fresh])
        #expect(box.answer(to: knowing, address: "198.51.100.4") == nil, "the asker holds the PTR at more than half its TTL")
        var stale = ptr
        stale.ttl = 30
        let forgetting = DNSMessage(isResponse: false, questions: [DNSQuestion(name: "_mediaroute._udp.local", type: .ptr)], answers: [stale])
        #expect(box.answer(to: forgetting, address: "198.51.100.4") != nil)
        #expect(box.answer(to: DNSMessage(isResponse: false, questions: [DNSQuestion(name: "_raop._tcp.local", type: .ptr)]), address: "198.51.100.4") == nil)
        #expect(box.answer(to: DNSMessage(isResponse: true, questions: [DNSQuestion(name: "_mediaroute._udp.local", type: .ptr)]), address: "198.51.100.4") == nil)
        // A question for the host's address, or for anything of the instance, is answered too.
        let host = box.answer(to: DNSMessage(isResponse: false, questions: [DNSQuestion(name: "mediaroute-abc.local", type: .a)]), address: "198.51.100.4")
        #expect(host?.answers.map(\.data) == [.a("198.51.100.4")])
        let any = box.answer(to: DNSMessage(isResponse: false, questions: [DNSQuestion(name: "Kitchen-Box._mediaroute._udp.local", type: .any)]), address: "198.51.100.4")
        #expect(any?.answers.count == 2)
    }

    @Test func aGoodbyeHasEveryRecordAtTTLZero() {
        #expect(box.announcement(address: "198.51.100.4", ttl: 0).answers.allSatisfy { $0.ttl == 0 })
        #expect(box.announcement(address: "198.51.100.4").answers.count == 4)
    }
}

@Suite(.serialized, .timeLimit(.minutes(1)), .enabled(if: NamespaceLab.isAvailable))
struct MDNSRespondingTests {
    /// Asks once for `_mediaroute._udp` from inside the room and prints the answer's SRV port and A address.
    static func querier(_ room: NamespaceLab.Room) -> String {
        """
        \(mdnsSocket(room))
        s.settimeout(0.5)
        def skip(b, o):
            while b[o]: o += 1 + b[o]
            return o + 1
        for attempt in range(20):
            s.sendto(struct.pack(">HHHHHH", 0, 0, 1, 0, 0, 0) + name("_mediaroute._udp.local") + struct.pack(">HH", 12, 1), ("224.0.0.251", 5353))
            try:
                while True:
                    data, sender = s.recvfrom(9000)
                    flags, qd, an, ns, ar = struct.unpack(">HHHHH", data[2:12])
                    if not flags & 0x8000: continue
                    o = 12
                    for _ in range(qd): o = skip(data, o) + 4
                    seen = {}
                    for _ in range(an + ns + ar):
                        o = skip(data, o); t, c, ttl, l = struct.unpack(">HHIH", data[o:o+10]); o += 10
                        if t == 33: seen["port"] = struct.unpack(">H", data[o+4:o+6])[0]
                        if t == 1: seen["a"] = socket.inet_ntoa(data[o:o+4])
                        if t == 12: seen["ttl"] = ttl
                        o += l
                    if "port" in seen and "a" in seen:
                        print("ANSWER", seen["port"], seen["a"], "from", sender[0], flush=True)
                        raise SystemExit
            except socket.timeout:
                pass
        print("NO ANSWER", flush=True)
        """
    }

    @Test func theBoxIsFoundFromAnotherHostAndSaysGoodbye() async throws {
        let lab = try NamespaceLab()
        let room = lab.rooms[0]
        let responder = MDNSResponder(
            advertising: MDNSServiceAdvertisement(instance: "Lab Box", serviceType: "_mediaroute._udp", port: 7391, txt: ["id=lab"], host: "mediaroute-lab"),
            interfaces: [room.outside])
        try await responder.start()
        try lab.start(in: room, ["/usr/bin/python3", "-u", "-c", Self.querier(room)], log: "query.log")
        #expect(await eventually(timeout: .seconds(8)) { lab.log("query.log").contains("ANSWER") || lab.log("query.log").contains("NO ANSWER") })
        #expect(lab.log("query.log").contains("ANSWER 7391 \(room.hostAddress) from \(room.hostAddress)"), "\(lab.log("query.log"))")
        #expect(await responder.answersSent >= 1)

        // Our own browser, on the same link, finds it too, and loses it at the goodbye.
        let transport = LANTransport(configuration: .init(interfaces: [room.outside]))
        let events = Locked<[DiscoveryEvent]>([])
        let follower = Task { for await event in transport.browse(serviceTypes: ["_mediaroute._udp"]) { events.withLock { $0.append(event) } } }
        defer { follower.cancel() }
        #expect(await eventually { events.value.contains { if case .appeared(let endpoint) = $0 { endpoint.id == "Lab Box._mediaroute._udp.local" } else { false } } })
        await responder.stop()
        #expect(await eventually(timeout: .seconds(3)) { events.value.contains(.lost(endpointID: "Lab Box._mediaroute._udp.local")) })
    }
}
