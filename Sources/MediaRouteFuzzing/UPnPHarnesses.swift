import IPNetwork
import Transport
import UPnP

/// XML from any device that answers on the LAN: descriptions, SCPDs, SOAP answers, GENA events.
enum UPnPHarnesses {
    static let all: [FuzzHarness] = [xml, description, scpd, soap, events, times]

    /// The limits every UPnP document is read with; small so the fuzzer reaches them.
    static let parser = XMLParser(maximumBytes: 32 * 1024, maximumDepth: 32, maximumElements: 2_000)

    static let xml = FuzzHarness("xml", "any XML document (entities, DTDs, namespaces, depth)") { bytes in
        guard let root = try? parser.parse(bytes) else { return nil }
        let (elements, depth) = root.size()
        if depth > 32 { return "kept a tree \(depth) deep, limit 32" }
        if elements > 2_000 { return "kept \(elements) elements, limit 2000" }
        // External entities are never loaded: a SYSTEM entity must not bring a file's text in.
        if root.containsText("root:x:0:0") { return "an external entity was loaded" }
        return nil
    }

    static let description = FuzzHarness("upnp-description", "device descriptions (LOCATION documents)") { bytes in
        let location = HTTPURL(host: "192.0.2.10", port: 49152, path: "/description.xml")
        guard let device = try? DeviceDescription.parse(bytes, location: location, parser: parser) else { return nil }
        // A device may only send us back to itself.
        for service in device.services {
            for url in [service.scpdURL, service.controlURL] + (service.eventSubscriptionURL.map { [$0] } ?? []) {
                if url.host != location.host { return "service URL \(url) leaves the device's host" }
            }
        }
        _ = device.isMediaRenderer
        return nil
    }

    static let scpd = FuzzHarness("upnp-scpd", "service descriptions (SCPDs: actions, allowed value ranges)") { bytes in
        guard let service = try? ServiceDescription.parse(bytes, parser: parser) else { return nil }
        for (name, range) in service.ranges where range.lowerBound < Int(Int32.min) || range.upperBound > Int(UInt32.max) {
            return "range of \(name) \(range) is not bounded to 32 bits (i4 or ui4)"
        }
        return nil
    }

    static let soap = FuzzHarness("soap", "SOAP answers and faults to AVTransport/RenderingControl actions") { bytes in
        guard bytes.count >= 2 else { return nil }
        let status = [200, 500, 401, 404][Int(bytes[0]) & 3]
        _ = try? SOAP.response(status: status, body: Array(bytes.dropFirst(1)), action: "GetPositionInfo", parser: parser)
        return nil
    }

    static let events = FuzzHarness("gena-event", "GENA NOTIFY bodies and the LastChange documents inside") { bytes in
        guard let change = try? LastChange.parseNotify(bytes, parser: parser) else { return nil }
        if let duration = change.currentTrackDuration, !duration.isFinite || duration < 0 { return "duration \(duration)" }
        if let position = change.relativeTimePosition, !position.isFinite || position < 0 { return "position \(position)" }
        return nil
    }

    static let times = FuzzHarness("upnp-values", "H+:MM:SS times and protocolInfo lists from renderers", maximumLength: 4 * 1024) { bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        if let seconds = UPnPTime.parse(text), !seconds.isFinite || seconds < 0 { return "time \(text.prefix(40)) read as \(seconds)" }
        for info in ProtocolInfo.parseList(text) { _ = ProtocolInfo.match("audio/mpeg", in: [info]) }
        return nil
    }
}

extension XMLElement {
    /// Elements in the tree and its depth.
    fileprivate func size() -> (elements: Int, depth: Int) {
        children.reduce((1, 1)) { total, child in
            let (elements, depth) = child.size()
            return (total.0 + elements, max(total.1, depth + 1))
        }
    }

    fileprivate func containsText(_ needle: String) -> Bool {
        text.contains(needle) || attributes.values.contains { $0.contains(needle) } || children.contains { $0.containsText(needle) }
    }
}
