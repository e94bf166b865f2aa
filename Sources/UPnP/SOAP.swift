

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

extension Substring {
    var trimmedXMLSpace: String { String(self).trimmedXMLSpace }
}
