

/// One entry of `GetProtocolInfo`: `protocol:network:contentFormat:additionalInfo`.
public struct ProtocolInfo: Sendable, Hashable, CustomStringConvertible {
    public var transportProtocol: String
    public var network: String
    /// The MIME type.
    public var contentFormat: String
    public var additionalInfo: String

    public init(transportProtocol: String = "http-get", network: String = "*", contentFormat: String, additionalInfo: String = "*") {
        self.transportProtocol = transportProtocol
        self.network = network
        self.contentFormat = contentFormat
        self.additionalInfo = additionalInfo
    }

    public var description: String { "\(transportProtocol):\(network):\(contentFormat):\(additionalInfo)" }

    /// A `Sink` list; malformed entries are skipped, at most 1 000 kept.
    public static func parseList(_ text: String) -> [ProtocolInfo] {
        text.split(separator: ",").prefix(1000).compactMap { entry in
            let fields = entry.trimmedXMLSpace.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
            guard fields.count == 4, !fields[2].isEmpty else { return nil }
            return ProtocolInfo(
                transportProtocol: String(fields[0]), network: String(fields[1]), contentFormat: String(fields[2]).lowercased(),
                additionalInfo: String(fields[3]))
        }
    }

    /// The sink entry that takes `mimeType` over HTTP (exact, then `type/*`, then `*`).
    public static func match(_ mimeType: String, in sinks: [ProtocolInfo]) -> ProtocolInfo? {
        let wanted = mimeType.lowercased()
        let http = sinks.filter { $0.transportProtocol == "http-get" }
        if let exact = http.first(where: { $0.contentFormat == wanted }) { return exact }
        let family = wanted.split(separator: "/").first.map { "\($0)/*" }
        if let family, let wildcard = http.first(where: { $0.contentFormat == family }) { return wildcard }
        return http.first { $0.contentFormat == "*" || $0.contentFormat == "*/*" }
    }
}
