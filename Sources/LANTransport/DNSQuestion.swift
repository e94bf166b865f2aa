import Transport

/// A DNS question.
public struct DNSQuestion: Sendable, Hashable {
    public var name: String
    public var type: UInt16
    /// The unicast-response bit (RFC 6762 §5.4).
    public var unicastResponse: Bool

    public init(name: String, type: DNSRecord.RecordType, unicastResponse: Bool = false) {
        self.name = name
        self.type = type.rawValue
        self.unicastResponse = unicastResponse
    }
}
