/// The records an mDNS browse has heard, indexed so that a datagram costs work in
/// proportion to its own records, never to what the cache already holds.
///
/// A LAN host can send anything (RFC 6762 trusts the link), so every record is kept
/// with the address it came from, and identities are bound to that address:
/// - an instance's SRV and TXT belong to the first host that announced them while
///   they live: another host's SRV/TXT for the same name is refused, and another
///   host's goodbye or cache-flush touches only its own records;
/// - an instance resolves to the host that owns its SRV, and only when that host
///   also said its target's A record is its own address: a host names itself,
///   never another (a Bonjour sleep proxy answering for a sleeping device is not
///   followed, which is the price of that rule);
/// - every table has a cap: records in all, per source, and per name, type and source.
///
/// Resolution is incremental: each change marks the instances it can affect (an SRV
/// or TXT marks its own instance, a PTR its target, an A the instances whose SRV
/// from that same host points at that name), and only those are resolved again.
package struct MDNSCache {
    /// How much the cache keeps.
    package struct Limits: Sendable {
        package init(records: Int = 4096, recordsPerSource: Int = 256, recordsPerSlot: Int = 8, pointersPerSlot: Int = 32) {
            self.records = records
            self.recordsPerSource = recordsPerSource
            self.recordsPerSlot = recordsPerSlot
            self.pointersPerSlot = pointersPerSlot
        }

        /// Records in all.
        package var records = 4096
        /// Records from one source address (an honest host announces a few dozen).
        package var recordsPerSource = 256
        /// Records of one name and type from one source (PTR: instances of a type on one host).
        package var recordsPerSlot = 8
        package var pointersPerSlot = 32
    }

    /// One record as kept.
    struct Entry: Sendable {
        var record: DNSRecord
        /// On the browser's clock.
        var received: Duration
        var expires: Duration
        /// Refresh queries asked for it since it was last received (RFC 6762 §5.2: at 80, 85,
        /// 90 and 95 % of its TTL).
        var refreshesAsked = 0
        /// Added to each refresh point, as a fraction of the TTL (0–2 %, RFC 6762 §5.2), so the
        /// queriers of a LAN do not all ask at once.
        var refreshJitter = 0.0

        /// When the next refresh query is due; nil once all four were asked.
        var nextRefresh: Duration? {
            guard refreshesAsked < MDNSCache.refreshPoints.count else { return nil }
            let lifetime = expires - received
            return received + lifetime * (MDNSCache.refreshPoints[refreshesAsked] + refreshJitter)
        }
    }

    /// The fractions of a record's TTL at which it is asked for again (RFC 6762 §5.2).
    static let refreshPoints = [0.80, 0.85, 0.90, 0.95]

    /// A resolved instance: where its owner says it is, and what it says of itself.
    package struct Resolution: Sendable, Equatable {
        /// As the PTR named it.
        package var instance: String
        /// As the PTR's owner name spelled it (`_airplay._tcp.local`).
        package var serviceType: String
        package var host: String
        package var port: UInt16
        package var txt: [String]
    }

    /// Why records were not kept, with how many.
    package enum Refusal: String, Sendable, CaseIterable {
        case claimedByAnotherHost = "records claimed by another host"
        case addressOfAnotherHost = "A record for another host's address"
        case cacheFull = "cache full"
        case sourceFull = "source over its record budget"
        case slotFull = "too many records of one name"
    }

    /// Records of one name (lowercased) and type from one source.
    struct Slot: Hashable, Sendable {
        var name: String
        var type: UInt16
        var source: String
    }

    private struct Owned: Hashable {
        var name: String
        var type: UInt16
    }

    package let limits: Limits
    /// Lowercased.
    private let serviceTypes: Set<String>
    private var slots: [Slot: [DNSRecord.RecordData: Entry]] = [:]
    /// Who owns an instance's SRV and TXT.
    private var owners: [Owned: String] = [:]
    private var perSource: [String: Int] = [:]
    /// Instances named by PTRs of the browsed types: lowercased name → (as spelt, type as spelt, PTR count).
    private var pointed: [String: (name: String, type: String, pointers: Int)] = [:]
    /// The instances whose owner's SRV points at a name: lowercased (target, source) → instances.
    private var targets: [Slot: Set<String>] = [:]
    /// Instances that changed since ``takeChanged()``.
    private var changed: Set<String> = []
    /// Instances named by a PTR that do not resolve yet (what a query asks about).
    package private(set) var unresolved: Set<String> = []
    /// Records kept.
    package private(set) var count = 0
    /// No record expires before this (a lower bound: refreshed records may expire later).
    private(set) var earliestExpiry: Duration?
    /// No refresh query is due before this (a lower bound, as ``earliestExpiry``).
    private(set) var earliestRefresh: Duration?
    /// Draws each record's refresh jitter (a fraction of 0.02 at most); tests give a fixed one.
    private let jitter: @Sendable () -> Double
    /// Instances resolved since the cache was made: the work a test holds to a budget.
    private(set) var resolutionsRun = 0

    package init(serviceTypes: [String], limits: Limits = Limits(), jitter: @escaping @Sendable () -> Double = { Double.random(in: 0...0.02) }) {
        self.serviceTypes = Set(serviceTypes.map { $0.lowercased() })
        self.limits = limits
        self.jitter = jitter
    }

    /// Takes in a response's records from `source`; returns what was refused, by reason.
    package mutating func ingest(_ records: [DNSRecord], from source: String, now: Duration) -> [Refusal: Int] {
        var refused: [Refusal: Int] = [:]
        // Cache-flush (RFC 6762 §10.2) once per name and type a response carries, of this source's
        // records only, and never of shared records (a PTR of a service type is shared).
        var flushed: Set<Slot> = []
        for record in records where record.cacheFlush && record.ttl > 0 && record.type != DNSRecord.RecordType.ptr.rawValue {
            let slot = Slot(name: record.name.lowercased(), type: record.type, source: source)
            guard flushed.insert(slot).inserted, let entries = slots[slot] else { continue }
            let stale = entries.values.filter { $0.received < now - .seconds(1) && $0.record.data != record.data }
            if !stale.isEmpty { update(slot, removing: stale.map(\.record.data)) }
        }
        for record in records {
            if let refusal = ingest(record, from: source, now: now) { refused[refusal, default: 0] += 1 }
        }
        return refused
    }

    private mutating func ingest(_ record: DNSRecord, from source: String, now: Duration) -> Refusal? {
        let name = record.name.lowercased()
        let slot = Slot(name: name, type: record.type, source: source)
        let entries = slots[slot] ?? [:]
        if record.ttl == 0 {
            // A goodbye removes the sender's own record, and nobody else's.
            if entries[record.data] != nil { update(slot, removing: [record.data]) }
            return nil
        }
        let expires = now + .seconds(Int(min(record.ttl, 86_400)))
        if entries[record.data] != nil {
            // A refresh: the same data, so nothing resolves differently.
            slots[slot]?[record.data]?.received = now
            slots[slot]?[record.data]?.expires = expires
            slots[slot]?[record.data]?.record.ttl = record.ttl
            slots[slot]?[record.data]?.refreshesAsked = 0
            if let next = slots[slot]?[record.data]?.nextRefresh { earliestRefresh = min(earliestRefresh ?? next, next) }
            return nil
        }
        switch DNSRecord.RecordType(rawValue: record.type) {
        case .srv, .txt:
            let owned = Owned(name: name, type: record.type)
            if let owner = owners[owned], owner != source { return .claimedByAnotherHost }
        case .a:
            // A host says where it is, not where another is.
            if case .a(let address) = record.data, address != source { return .addressOfAnotherHost }
        case .ptr:
            guard serviceTypes.contains(name) else { return nil }
        default:
            // Nothing a browse resolves with: not kept.
            return nil
        }
        let perSlot = record.type == DNSRecord.RecordType.ptr.rawValue ? limits.pointersPerSlot : limits.recordsPerSlot
        guard entries.count < perSlot else { return .slotFull }
        guard perSource[source, default: 0] < limits.recordsPerSource else { return .sourceFull }
        guard count < limits.records else { return .cacheFull }
        update(slot, adding: Entry(record: record, received: now, expires: expires, refreshJitter: min(0.02, max(0, jitter()))))
        return nil
    }

    /// The questions that keep the cache's records alive while the browse runs (RFC 6762 §5.2):
    /// each record is asked for at 80, 85, 90 and 95 % of its TTL (plus its jitter) until an
    /// answer refreshes it. Without them a record's TTL runs out whenever nobody else on the link
    /// asks — avahi and Apple's responders give SRV and address records 120 s — and a device in
    /// the middle of a stream would be dropped as gone. One question per name and type, at most
    /// `limit`; what is left is due at the next call. Scans the cache only when a refresh is
    /// due (the browse calls it at most four times a second; the cache is bounded).
    package mutating func refreshQuestions(now: Duration, limit: Int) -> [DNSQuestion] {
        guard let earliest = earliestRefresh, earliest <= now else { return [] }
        var questions: [DNSQuestion] = []
        var asked: Set<Slot> = []
        var next: Duration?
        for (slot, entries) in slots {
            for (data, entry) in entries {
                guard let due = entry.nextRefresh else { continue }
                guard due <= now, questions.count < limit || asked.contains(Slot(name: slot.name, type: slot.type, source: "")) else {
                    next = min(next ?? due, due)
                    continue
                }
                let question = Slot(name: slot.name, type: slot.type, source: "")
                if asked.insert(question).inserted, let type = DNSRecord.RecordType(rawValue: slot.type) {
                    questions.append(DNSQuestion(name: entry.record.name, type: type))
                }
                // Past points are skipped: one question for however many came due.
                var updated = entry
                while let point = updated.nextRefresh, point <= now { updated.refreshesAsked += 1 }
                slots[slot]?[data] = updated
                if let point = updated.nextRefresh { next = min(next ?? point, point) }
            }
        }
        earliestRefresh = next
        return questions
    }

    /// Drops what expired.
    package mutating func expire(now: Duration) {
        guard let earliest = earliestExpiry, earliest <= now else { return }
        var next: Duration?
        for (slot, entries) in slots {
            var expired: [DNSRecord.RecordData] = []
            for (data, entry) in entries {
                if entry.expires <= now { expired.append(data) } else { next = min(next ?? entry.expires, entry.expires) }
            }
            if !expired.isEmpty { update(slot, removing: expired) }
        }
        earliestExpiry = next
    }

    /// The instances whose resolution may have changed since the last call.
    package mutating func takeChanged() -> Set<String> {
        defer { changed = [] }
        return changed
    }

    /// Where `instance` (lowercased) is, if its records are all there.
    package mutating func resolve(_ instance: String) -> Resolution? {
        resolutionsRun += 1
        let resolution = lookUp(instance)
        if resolution == nil && pointed[instance] != nil { unresolved.insert(instance) } else { unresolved.remove(instance) }
        return resolution
    }

    private func lookUp(_ instance: String) -> Resolution? {
        guard let pointer = pointed[instance], let owner = owners[Owned(name: instance, type: DNSRecord.RecordType.srv.rawValue)],
            let srv = slots[Slot(name: instance, type: DNSRecord.RecordType.srv.rawValue, source: owner)]?.values.first,
            case .srv(_, _, let port, let target) = srv.record.data
        else { return nil }
        guard slots[Slot(name: target.lowercased(), type: DNSRecord.RecordType.a.rawValue, source: owner)]?[.a(owner)] != nil else { return nil }
        var txt: [String] = []
        if owners[Owned(name: instance, type: DNSRecord.RecordType.txt.rawValue)] == owner,
            case .txt(let strings)? = slots[Slot(name: instance, type: DNSRecord.RecordType.txt.rawValue, source: owner)]?.values.first?.record.data
        {
            txt = strings
        }
        return Resolution(instance: pointer.name, serviceType: pointer.type, host: owner, port: port, txt: txt)
    }

    /// The PTRs of the browsed types still above half their TTL (known-answer suppression, RFC 6762 §7.1), at most `limit`.
    func knownAnswers(now: Duration, limit: Int) -> [DNSRecord] {
        var answers: [DNSRecord] = []
        for type in serviceTypes {
            for (slot, entries) in slots where slot.name == type && slot.type == DNSRecord.RecordType.ptr.rawValue {
                for entry in entries.values where entry.expires - now > (entry.expires - entry.received) / 2 {
                    guard answers.count < limit else { return answers }
                    answers.append(entry.record)
                }
            }
        }
        return answers
    }

    /// What is still missing for `instance` (lowercased): its SRV, its TXT, its target's address.
    func missing(for instance: String) -> (srv: Bool, txt: Bool, target: String?) {
        guard pointed[instance] != nil else { return (false, false, nil) }
        let owner = owners[Owned(name: instance, type: DNSRecord.RecordType.srv.rawValue)]
        let srv = owner.flatMap { slots[Slot(name: instance, type: DNSRecord.RecordType.srv.rawValue, source: $0)]?.values.first }
        let hasTXT = owners[Owned(name: instance, type: DNSRecord.RecordType.txt.rawValue)] != nil
        guard let srv, case .srv(_, _, _, let target) = srv.record.data else { return (true, !hasTXT, nil) }
        return (false, !hasTXT, target)
    }

    /// Adds one record to a slot, or removes some, and keeps every index in step: counts,
    /// owners, pointers, targets, and the instances the change touches. Work in proportion to
    /// the records changed.
    private mutating func update(_ slot: Slot, adding added: Entry? = nil, removing removed: [DNSRecord.RecordData] = []) {
        var entries = slots[slot] ?? [:]
        var gone: [Entry] = []
        for data in removed { if let entry = entries.removeValue(forKey: data) { gone.append(entry) } }
        if let added {
            entries[added.record.data] = added
            earliestExpiry = min(earliestExpiry ?? added.expires, added.expires)
            if let refresh = added.nextRefresh { earliestRefresh = min(earliestRefresh ?? refresh, refresh) }
        }
        let delta = (added == nil ? 0 : 1) - gone.count
        count += delta
        perSource[slot.source, default: 0] += delta
        if perSource[slot.source] == 0 { perSource[slot.source] = nil }
        slots[slot] = entries.isEmpty ? nil : entries
        switch DNSRecord.RecordType(rawValue: slot.type) {
        case .ptr:
            for entry in gone {
                guard case .ptr(let instance) = entry.record.data else { continue }
                let key = instance.lowercased()
                pointed[key]?.pointers -= 1
                if pointed[key]?.pointers ?? 0 <= 0 {
                    pointed[key] = nil
                    unresolved.remove(key)
                }
                changed.insert(key)
            }
            if let added, case .ptr(let instance) = added.record.data {
                let key = instance.lowercased()
                pointed[key, default: (instance, added.record.name, 0)].pointers += 1
                changed.insert(key)
            }
        case .srv, .txt:
            let owned = Owned(name: slot.name, type: slot.type)
            if entries.isEmpty {
                if owners[owned] == slot.source { owners[owned] = nil }
            } else {
                owners[owned] = slot.source
            }
            if slot.type == DNSRecord.RecordType.srv.rawValue {
                for entry in gone {
                    if case .srv(_, _, _, let target) = entry.record.data {
                        let key = Slot(name: target.lowercased(), type: DNSRecord.RecordType.a.rawValue, source: slot.source)
                        targets[key]?.remove(slot.name)
                        if targets[key]?.isEmpty ?? false { targets[key] = nil }
                    }
                }
                if let added, case .srv(_, _, _, let target) = added.record.data {
                    targets[Slot(name: target.lowercased(), type: DNSRecord.RecordType.a.rawValue, source: slot.source), default: []].insert(slot.name)
                }
            }
            changed.insert(slot.name)
        case .a:
            changed.formUnion(targets[slot] ?? [])
        default:
            break
        }
    }
}
