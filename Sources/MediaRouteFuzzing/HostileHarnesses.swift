import Coordination
import LANTransport

/// The state that LAN bytes drive, beside the parsers: the mDNS cache and the household
/// medium's envelopes. Each checks the budgets and bindings hold whatever arrives.
enum HostileHarnesses {
    static let all: [FuzzHarness] = [mdnsCache, householdDatagram]

    /// DNS responses from sources the input picks, into a small cache: its caps hold, every
    /// resolution names the host that sent the instance's records (a host names itself only),
    /// and the refresh queries stay within their limit.
    static let mdnsCache = FuzzHarness("mdns-cache", "mDNS responses from several sources into the browse cache", maximumLength: 9_000) { bytes in
        let limits = MDNSCache.Limits(records: 64, recordsPerSource: 24, recordsPerSlot: 4, pointersPerSlot: 8)
        var cache = MDNSCache(serviceTypes: ["_googlecast._tcp.local", "_airplay._tcp.local"], limits: limits)
        // Datagrams one after another, a second apart: a byte choosing one of four sources, a
        // 16-bit length, the bytes.
        var offset = 0, second = 0
        while offset + 3 <= bytes.count {
            let source = "192.0.2.\(Int(bytes[offset]) % 4 + 1)"
            let length = Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2])
            let end = min(bytes.count, offset + 3 + length)
            if let message = try? DNSMessage.decode(Array(bytes[(offset + 3)..<end])) {
                _ = cache.ingest(message.records, from: source, now: .seconds(second))
                for instance in cache.takeChanged() {
                    guard let resolution = cache.resolve(instance) else { continue }
                    if !resolution.host.hasPrefix("192.0.2.") { return "\(instance) resolved to \(resolution.host), which sent nothing" }
                }
            }
            if cache.count > limits.records { return "\(cache.count) records kept, over \(limits.records)" }
            // The browse's tick: what expired goes, then what is due is asked, within the limit
            // and each (name, type) once.
            cache.expire(now: .seconds(second))
            let refresh = cache.refreshQuestions(now: .seconds(second), limit: 8)
            if refresh.count > 8 { return "\(refresh.count) refresh questions, over 8" }
            if Set(refresh.map { "\($0.name.lowercased()) \($0.type)" }).count != refresh.count { return "a refresh question asked twice" }
            offset = end
            second += 1
        }
        cache.expire(now: .seconds(second + 90_000))
        if cache.count != 0 { return "\(cache.count) records outlived every TTL" }
        if !cache.unresolved.isEmpty { return "instances left unresolved after everything expired" }
        return nil
    }

    static let householdKey = HouseholdKey(Array("the fuzzer's household".utf8))!

    /// Datagrams on the household medium's port: unsealed (a medium without a key reads the
    /// envelope) and sealed under the key; a datagram whose tag does not match is never opened.
    static let householdDatagram = FuzzHarness("household-datagram", "datagrams on the household coordination medium", maximumLength: 16_384) { bytes in
        _ = LANCoordinationMedium.open(bytes, key: nil)
        let sealed = householdKey.seal(bytes)
        let opened = LANCoordinationMedium.open(sealed, key: householdKey)
        if opened != nil && LANCoordinationMedium.open(bytes, key: nil) == nil { return "a sealed datagram opened whose message does not read" }
        if let opened, LANCoordinationMedium.open(bytes, key: nil)?.sequence != opened.sequence { return "sealing changed the envelope" }
        if !bytes.isEmpty, LANCoordinationMedium.open(bytes, key: householdKey) != nil, householdKey.open(bytes) == nil {
            return "an unsealed datagram opened under the key"
        }
        return nil
    }
}
