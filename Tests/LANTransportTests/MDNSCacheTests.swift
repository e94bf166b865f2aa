@testable import LANTransport
import Testing

/// The mDNS cache on records, as a hostile LAN host would send them: the work a datagram
/// causes is bounded by its own records, and identities stay with the host that announced them.
@Suite struct MDNSCacheTests {
    static let type = "_googlecast._tcp.local"
    static let tv = "198.51.100.7"
    static let attacker = "198.51.100.66"

    static func honest(_ instance: String = "Living Room TV._googlecast._tcp.local", host: String = tv, port: UInt16 = 8009) -> [DNSRecord] {
        [
            DNSRecord(name: type, ttl: 4500, data: .ptr(instance)),
            DNSRecord(name: instance, ttl: 120, data: .srv(priority: 0, weight: 0, port: port, target: "tv.local"), cacheFlush: true),
            DNSRecord(name: instance, ttl: 4500, data: .txt(["id=abc", "fn=Living Room TV"]), cacheFlush: true),
            DNSRecord(name: "tv.local", ttl: 120, data: .a(host), cacheFlush: true),
        ]
    }

    static func pointers(_ count: Int, from offset: Int = 0) -> [DNSRecord] {
        (offset..<offset + count).map { DNSRecord(name: type, ttl: 86_400, data: .ptr("Fake \($0)._googlecast._tcp.local")) }
    }

    @discardableResult
    static func resolveChanged(_ cache: inout MDNSCache) -> [MDNSCache.Resolution] {
        cache.takeChanged().compactMap { cache.resolve($0) }
    }

    @Test func anInstanceResolvesToTheHostThatAnnouncedIt() {
        var cache = MDNSCache(serviceTypes: [Self.type])
        let refused = cache.ingest(Self.honest(), from: Self.tv, now: .seconds(1))
        #expect(refused.isEmpty)
        let resolved = Self.resolveChanged(&cache)
        #expect(resolved == [MDNSCache.Resolution(
            instance: "Living Room TV._googlecast._tcp.local", serviceType: Self.type, host: Self.tv, port: 8009, txt: ["id=abc", "fn=Living Room TV"])])
    }

    /// RFC 6762 §5.2 on the honest device's records (SRV and A: 120 s; PTR and TXT: 4 500 s):
    /// asked for at 80 % of their TTL plus the jitter, then 85, 90 and 95 %, each point once;
    /// an answer starts them again.
    @Test func recordsAreAskedForAgainAt80To95PercentOfTheirTTL() {
        var cache = MDNSCache(serviceTypes: [Self.type], jitter: { 0.01 })
        _ = cache.ingest(Self.honest(), from: Self.tv, now: .zero)
        Self.resolveChanged(&cache)
        /// As the browse's tick does: what expired goes, then what is due is asked.
        func asked(at seconds: Double) -> Set<String> {
            cache.expire(now: .milliseconds(Int(seconds * 1000)))
            return Set(cache.refreshQuestions(now: .milliseconds(Int(seconds * 1000)), limit: 48).map { "\($0.name) \($0.type)" })
        }
        let short: Set = ["Living Room TV._googlecast._tcp.local 33", "tv.local 1"]
        #expect(asked(at: 96).isEmpty)  // 80 % of 120 s, before the jitter's 1 %
        #expect(asked(at: 97.3) == short)  // 81 %
        #expect(asked(at: 98).isEmpty)  // asked once at this point
        #expect(asked(at: 103.3) == short)  // 86 %
        #expect(asked(at: 115.5) == short)  // 96.25 %: the 90 % and 95 % points once, together
        #expect(asked(at: 116).isEmpty)  // all four asked
        // An answer refreshes the records: asked again at 81 % of the new lifetime.
        _ = cache.ingest(Array(Self.honest()[1...1]) + Array(Self.honest()[3...3]), from: Self.tv, now: .seconds(117))
        #expect(asked(at: 117 + 96).isEmpty)
        #expect(asked(at: 117 + 97.3) == short)
        // The long-lived ones at 81 % of 4 500 s.
        #expect(asked(at: 3_645.1) == ["_googlecast._tcp.local 12", "Living Room TV._googlecast._tcp.local 16"])
    }

    /// However many records are due, one call asks at most `limit` questions; the rest come next.
    @Test func refreshQuestionsStayWithinTheirLimit() {
        var cache = MDNSCache(serviceTypes: [Self.type], jitter: { 0 })
        _ = cache.ingest(Self.pointers(100), from: Self.attacker, now: .zero)
        let first = cache.refreshQuestions(now: .seconds(70_000), limit: 48)
        #expect(first.count == 1)  // 100 PTRs of one name and type: one question
        var shortLived: [DNSRecord] = []
        for index in 0..<60 { shortLived.append(DNSRecord(name: "host\(index).local", ttl: 10, data: .a(Self.tv), cacheFlush: true)) }
        _ = cache.ingest(shortLived, from: Self.tv, now: .seconds(70_000))
        #expect(cache.refreshQuestions(now: .seconds(70_008.1), limit: 48).count == 48)
        #expect(cache.refreshQuestions(now: .seconds(70_008.2), limit: 48).count == 12)
    }

    /// A cache full of an attacker's PTRs: each later datagram resolves only what it touches
    /// (the measured attack was O(n²) in the cache: every datagram resolved every instance).
    @Test func workPerDatagramIsBoundedByItsOwnRecordsNotByTheCache() {
        var cache = MDNSCache(serviceTypes: [Self.type], limits: .init(records: 4096, recordsPerSource: 4096, recordsPerSlot: 8, pointersPerSlot: 4096))
        for batch in 0..<12 {
            _ = cache.ingest(Self.pointers(300, from: batch * 300), from: Self.attacker, now: .seconds(1))
            Self.resolveChanged(&cache)
        }
        #expect(cache.count == 3600)
        #expect(cache.unresolved.count == 3600)
        let afterFlood = cache.resolutionsRun
        // Empty responses and refreshes of the same records change nothing: nothing is resolved.
        for tick in 0..<100 {
            _ = cache.ingest([], from: Self.attacker, now: .seconds(2) + .milliseconds(tick * 100))
            _ = cache.ingest(Self.pointers(5), from: Self.attacker, now: .seconds(2) + .milliseconds(tick * 100))
            Self.resolveChanged(&cache)
        }
        #expect(cache.resolutionsRun == afterFlood)
        // An honest device's answer resolves its own instance, once per changed record at most.
        _ = cache.ingest(Self.honest(), from: Self.tv, now: .seconds(20))
        let resolved = Self.resolveChanged(&cache)
        #expect(resolved.map(\.host) == [Self.tv])
        #expect(cache.resolutionsRun - afterFlood == 1)
    }

    @Test func anotherHostCannotTakeOverAnInstanceOrItsAddress() {
        var cache = MDNSCache(serviceTypes: [Self.type])
        _ = cache.ingest(Self.honest(), from: Self.tv, now: .seconds(1))
        Self.resolveChanged(&cache)
        // The attacker announces the same instance at its own address, with cache-flush, and says
        // the TV's host name is at its address.
        let refused = cache.ingest(Self.honest(host: Self.attacker, port: 9999), from: Self.attacker, now: .seconds(3))
        #expect(refused[.claimedByAnotherHost] == 2)
        // An A record naming another host's address is refused whoever sends it.
        let other = cache.ingest([DNSRecord(name: "tv.local", ttl: 120, data: .a(Self.attacker))], from: Self.tv, now: .seconds(3))
        #expect(other[.addressOfAnotherHost] == 1)
        let resolution = cache.resolve("living room tv._googlecast._tcp.local")
        #expect(resolution?.host == Self.tv && resolution?.port == 8009)
    }

    @Test func aGoodbyeFromAnotherHostRemovesNothingOfTheDevice() {
        var cache = MDNSCache(serviceTypes: [Self.type])
        _ = cache.ingest(Self.honest(), from: Self.tv, now: .seconds(1))
        Self.resolveChanged(&cache)
        let goodbyes = Self.honest().map { record -> DNSRecord in
            var record = record
            record.ttl = 0
            return record
        }
        _ = cache.ingest(goodbyes, from: Self.attacker, now: .seconds(2))
        let kept = Self.resolveChanged(&cache)
        #expect(kept.isEmpty)  // nothing of the device changed
        #expect(cache.resolve("living room tv._googlecast._tcp.local")?.host == Self.tv)
        // The device's own goodbye does.
        _ = cache.ingest(goodbyes, from: Self.tv, now: .seconds(2))
        let gone = Self.resolveChanged(&cache)
        #expect(gone.isEmpty && cache.resolve("living room tv._googlecast._tcp.local") == nil)
        #expect(cache.count == 0)
    }

    @Test func whenTheOwnerGoesAnotherHostMayAnnounceTheName() {
        var cache = MDNSCache(serviceTypes: [Self.type])
        _ = cache.ingest(Self.honest(), from: Self.tv, now: .seconds(1))
        Self.resolveChanged(&cache)
        // The SRV and A expire after 120 s, the TXT after 4 500: at 200 s the SRV is free.
        cache.expire(now: .seconds(200))
        let expired = Self.resolveChanged(&cache)
        #expect(expired.isEmpty)
        _ = cache.ingest(Array(Self.honest(host: Self.attacker).dropLast(2)) + [DNSRecord(name: "tv.local", ttl: 120, data: .a(Self.attacker))],
                         from: Self.attacker, now: .seconds(201))
        let resolved = Self.resolveChanged(&cache)
        // The TXT is still the old owner's: the new one gets no TXT until that expires.
        #expect(resolved.map(\.host) == [Self.attacker])
        #expect(resolved.first?.txt == [])
    }

    @Test func tablesStayWithinTheirCaps() {
        var cache = MDNSCache(serviceTypes: [Self.type], limits: .init(records: 100, recordsPerSource: 40, recordsPerSlot: 4, pointersPerSlot: 32))
        let pointers = cache.ingest(Self.pointers(50), from: Self.attacker, now: .seconds(1))
        #expect(pointers[.slotFull] == 18)
        for source in 0..<10 {
            _ = cache.ingest(Self.pointers(32, from: 100 * source), from: "198.51.100.\(100 + source)", now: .seconds(1))
        }
        #expect(cache.count == 100)
        let addresses = (0..<10).map { DNSRecord(name: "x.local", ttl: 10, data: .a("198.51.100.\($0)")) }
        let refused = cache.ingest(addresses, from: Self.tv, now: .seconds(1))
        #expect(refused[.addressOfAnotherHost] == 9 && refused[.cacheFull] == 1)
        cache.expire(now: .seconds(86_401))
        #expect(cache.count == 0)
        #expect(cache.unresolved.isEmpty)
    }

    @Test func cacheFlushOfSharedPointersIsIgnoredAndFlushesOnlyTheSendersRecords() {
        var cache = MDNSCache(serviceTypes: [Self.type])
        _ = cache.ingest(Self.honest(), from: Self.tv, now: .seconds(1))
        _ = cache.ingest(Self.honest("Kitchen._googlecast._tcp.local"), from: Self.tv, now: .seconds(1))
        Self.resolveChanged(&cache)
        var flushingPointer = DNSRecord(name: Self.type, ttl: 4500, data: .ptr("Other._googlecast._tcp.local"))
        flushingPointer.cacheFlush = true
        _ = cache.ingest([flushingPointer], from: Self.tv, now: .seconds(5))
        let livingRoom = cache.resolve("living room tv._googlecast._tcp.local")
        let kitchen = cache.resolve("kitchen._googlecast._tcp.local")
        #expect(livingRoom != nil && kitchen != nil)
    }
}

/// RFC 6762 §6: what the responder multicasts is bounded by time, not by the questions asked.
@Suite struct MulticastAnswerThrottleTests {
    @Test func aStreamOfQuestionsGetsOneAnswerASecondPerInterface() {
        var throttle = MulticastAnswerThrottle()
        var sent = 0
        // 10 000 questions over 5 s on one interface.
        for index in 0..<10_000 where throttle.mayMulticast(on: "eth0", now: .milliseconds(index / 2)) { sent += 1 }
        #expect(sent == 5)
        #expect(throttle.suppressed == 9_995)
        // Another interface has its own second.
        let other = throttle.mayMulticast(on: "wlan0", now: .milliseconds(4999))
        #expect(other)
    }
}
