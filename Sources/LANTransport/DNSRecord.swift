import Transport

/// A DNS resource record as mDNS/DNS-SD uses it (RFC 1035, 6762, 6763).
public struct DNSRecord: Sendable, Hashable {
    public enum RecordType: UInt16, Sendable, Hashable {
        case a = 1
        case ptr = 12
        case txt = 16
        case aaaa = 28
        case srv = 33
        case any = 255
    }

    /// What the record says, decoded for the types DNS-SD needs.
    public enum RecordData: Sendable, Hashable {
        case a(String)
        case aaaa(String)
        case ptr(String)
        case srv(priority: UInt16, weight: UInt16, port: UInt16, target: String)
        /// `key=value` strings (a key without `=` has an empty value).
        case txt([String])
        case other(type: UInt16, bytes: [UInt8])
    }

    public var name: String
    public var type: UInt16
    /// The cache-flush bit (RFC 6762 §10.2) stripped from the class.
    public var cacheFlush: Bool
    public var ttl: UInt32
    public var data: RecordData

    public init(name: String, ttl: UInt32, data: RecordData, cacheFlush: Bool = false) {
        self.name = name
        self.ttl = ttl
        self.data = data
        self.cacheFlush = cacheFlush
        switch data {
        case .a: type = RecordType.a.rawValue
        case .aaaa: type = RecordType.aaaa.rawValue
        case .ptr: type = RecordType.ptr.rawValue
        case .srv: type = RecordType.srv.rawValue
        case .txt: type = RecordType.txt.rawValue
        case .other(let other, _): type = other
        }
    }
}
