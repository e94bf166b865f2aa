/// A failed UPnP action: a SOAP fault with its UPnP error code, or a bad answer.
public struct UPnPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The UPnP error code from the fault (e.g. 401 Invalid Action, 501 Action Failed,
    /// 701 Transition not available, 716 Resource not found); nil when the answer was not a fault.
    public var code: Int?
    public var message: String

    public init(code: Int?, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { code.map { "UPnP error \($0): \(message)" } ?? message }
}

/// Builds SOAP requests for UPnP actions and reads their answers.
public enum SOAP {
    /// The request body for `action` of `serviceType` with arguments in declared order.
    public static func request(action: String, serviceType: String, arguments: [(String, String)]) -> [UInt8] {
        var body = #"<?xml version="1.0" encoding="utf-8"?>"#
        body += #"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" s:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body>"#
        body += "<u:\(action) xmlns:u=\"\(serviceType.xmlEscaped)\">"
        for (name, value) in arguments { body += "<\(name)>\(value.xmlEscaped)</\(name)>" }
        body += "</u:\(action)></s:Body></s:Envelope>"
        return Array(body.utf8)
    }

    /// The `SOAPACTION` header value.
    public static func actionHeader(action: String, serviceType: String) -> String { "\"\(serviceType)#\(action)\"" }

    /// The output arguments of a successful answer (HTTP 200), or the fault's
    /// ``UPnPError`` (HTTP 500, or any status with a fault body).
    public static func response(status: Int, body: [UInt8], action: String, parser: XMLParser = XMLParser(maximumBytes: 128 * 1024))
        throws(UPnPError) -> [String: String]
    {
        let envelope: XMLElement
        do {
            envelope = try parser.parse(body)
        } catch {
            throw UPnPError(code: nil, "HTTP \(status) to \(action), body not usable: \(error)")
        }
        guard envelope.name == "Envelope", envelope.namespace == UPnPNamespace.soapEnvelope, let soapBody = envelope.child("Body") else {
            throw UPnPError(code: nil, "HTTP \(status) to \(action): not a SOAP envelope")
        }
        if let fault = soapBody.child("Fault") {
            let detail = fault.child("detail")?.child("UPnPError")
            let code = detail?.value("errorCode").flatMap { Int($0) }
            let text = detail?.value("errorDescription") ?? fault.value("faultstring") ?? "fault"
            throw UPnPError(code: code, "\(action): \(text)")
        }
        guard status == 200 else { throw UPnPError(code: nil, "HTTP \(status) to \(action)") }
        guard let answer = soapBody.child("\(action)Response") else {
            throw UPnPError(code: nil, "\(action): the answer has no \(action)Response")
        }
        var values: [String: String] = [:]
        for argument in answer.children { values[argument.name] = argument.text }
        return values
    }
}

/// `H+:MM:SS[.F+]` durations as AVTransport uses them.
public enum UPnPTime {
    /// Seconds, or nil for `NOT_IMPLEMENTED`, empty or malformed values.
    public static func parse(_ text: String) -> Double? {
        let parts = text.trimmedXMLSpace.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, let hours = Int(parts[0]), hours >= 0, hours < 100_000,
            let minutes = Int(parts[1]), (0..<60).contains(minutes), parts[1].count == 2
        else { return nil }
        let secondsText = parts[2]
        let fields = secondsText.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard fields[0].count == 2, let seconds = Int(fields[0]), (0..<60).contains(seconds) else { return nil }
        var fraction = 0.0
        if fields.count == 2 {
            // Either decimal (`.123`) or a `F0/F1` fraction.
            let part = fields[1]
            if let slash = part.firstIndex(of: "/") {
                guard let numerator = Int(part[..<slash]), let denominator = Int(part[part.index(after: slash)...]), denominator > 0,
                    numerator >= 0, numerator < denominator
                else { return nil }
                fraction = Double(numerator) / Double(denominator)
            } else {
                guard !part.isEmpty, part.count <= 9, part.allSatisfy(\.isNumber), let value = Int(part) else { return nil }
                fraction = Double(value) / Double(pow10(part.count))
            }
        }
        return Double(hours * 3600 + minutes * 60 + seconds) + fraction
    }

    /// `H:MM:SS`, with `.mmm` when the value has a fraction.
    public static func format(_ seconds: Double) -> String {
        let clamped = seconds.isFinite ? max(seconds, 0) : 0
        let milliseconds = Int((clamped * 1000).rounded())
        let whole = milliseconds / 1000
        let text = "\(whole / 3600):\(two((whole / 60) % 60)):\(two(whole % 60))"
        let fraction = milliseconds % 1000
        guard fraction != 0 else { return text }
        let digits = String(fraction)
        return text + "." + String(repeating: "0", count: 3 - digits.count) + digits
    }

    private static func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
    private static func pow10(_ exponent: Int) -> Int { (0..<exponent).reduce(1) { value, _ in value * 10 } }
}

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

extension Substring {
    var trimmedXMLSpace: String { String(self).trimmedXMLSpace }
}
