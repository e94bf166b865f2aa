#if canImport(Glibc)
import Glibc
#endif
import Logging
import MediaClock
import NIOCore
import Transport

/// One DNS-SD service this box offers (RFC 6763), as an mDNS responder answers for it.
public struct MDNSServiceAdvertisement: Sendable, Hashable {
    /// The instance's label, e.g. "Kitchen Box" (dots become dashes: a label holds none).
    public var instance: String
    /// `_mediaroute._udp`.
    public var serviceType: String
    public var port: UInt16
    /// `key=value` strings.
    public var txt: [String]
    /// The host label the SRV record points at, e.g. "mediaroute-1a2b3c" (`.local` is added).
    public var host: String

    public init(instance: String, serviceType: String, port: UInt16, txt: [String], host: String) {
        self.instance = String(instance.replacingDots().utf8.prefix(63)) ?? "MediaRoute"
        self.serviceType = serviceType.hasSuffix(".local") ? String(serviceType.dropLast(6)) : serviceType
        self.port = port
        self.txt = txt
        self.host = String(host.replacingDots().utf8.prefix(63)) ?? "mediaroute"
    }

    public var typeName: String { serviceType + ".local" }
    public var instanceName: String { instance + "." + typeName }
    public var hostName: String { host + ".local" }

    /// The records of the service as seen from an interface whose address is `address`.
    public func records(address: String, ttl: UInt32) -> (ptr: DNSRecord, srv: DNSRecord, txt: DNSRecord, a: DNSRecord) {
        (
            DNSRecord(name: typeName, ttl: ttl, data: .ptr(instanceName)),
            DNSRecord(name: instanceName, ttl: ttl, data: .srv(priority: 0, weight: 0, port: port, target: hostName), cacheFlush: true),
            DNSRecord(name: instanceName, ttl: ttl, data: .txt(txt.isEmpty ? [""] : txt), cacheFlush: true),
            DNSRecord(name: hostName, ttl: ttl, data: .a(address), cacheFlush: true)
        )
    }

    /// The answer to `query` from an interface whose address is `address`: the records it
    /// asks for that the asker does not already hold (known answers at more than half their
    /// TTL, RFC 6762 §7.1), with the rest of the service as additional records; nil when it
    /// asks nothing of ours or is itself a response.
    public func answer(to query: DNSMessage, address: String, ttl: UInt32 = 120) -> DNSMessage? {
        guard !query.isResponse else { return nil }
        let records = self.records(address: address, ttl: ttl)
        let all = [records.ptr, records.srv, records.txt, records.a]
        var answers: [DNSRecord] = []
        for question in query.questions {
            let name = question.name.lowercased()
            let wanted = all.filter { record in
                record.name.lowercased() == name && (question.type == record.type || question.type == DNSRecord.RecordType.any.rawValue)
            }
            for record in wanted where !answers.contains(record) {
                let known = query.answers.contains { $0.name.lowercased() == record.name.lowercased() && $0.data == record.data && $0.ttl > ttl / 2 }
                if !known { answers.append(record) }
            }
        }
        guard !answers.isEmpty else { return nil }
        let additionals = all.filter { record in !answers.contains(record) && record.type != DNSRecord.RecordType.ptr.rawValue }
        return DNSMessage(isResponse: true, answers: answers, additionals: additionals)
    }

    /// An unsolicited announcement (or, with `ttl` 0, a goodbye) of every record.
    public func announcement(address: String, ttl: UInt32 = 120) -> DNSMessage {
        let records = self.records(address: address, ttl: ttl)
        return DNSMessage(isResponse: true, answers: [records.ptr, records.srv, records.txt, records.a])
    }
}
