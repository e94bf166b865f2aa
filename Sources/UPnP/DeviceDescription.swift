public import IPNetwork

/// The namespaces of UPnP documents.
public enum UPnPNamespace {
    public static let device = "urn:schemas-upnp-org:device-1-0"
    public static let service = "urn:schemas-upnp-org:service-1-0"
    public static let soapEnvelope = "http://schemas.xmlsoap.org/soap/envelope/"
    public static let control = "urn:schemas-upnp-org:control-1-0"
    public static let event = "urn:schemas-upnp-org:event-1-0"
    public static let avTransportEvent = "urn:schemas-upnp-org:metadata-1-0/AVT/"
    public static let renderingControlEvent = "urn:schemas-upnp-org:metadata-1-0/RCS/"
}

/// One service of a device: where its SCPD, control and event URLs are.
public struct ServiceReference: Sendable, Hashable {
    public var serviceType: String
    public var serviceID: String
    public var scpdURL: HTTPURL
    public var controlURL: HTTPURL
    public var eventSubscriptionURL: HTTPURL?

    /// Whether this is the service type `kind` (e.g. `AVTransport`) in any version.
    public func isKind(_ kind: String) -> Bool {
        serviceType.hasPrefix("urn:schemas-upnp-org:service:\(kind):")
    }
}

/// A device description (`LOCATION`'s document), reduced to the device that matters.
public struct DeviceDescription: Sendable, Hashable {
    public var deviceType: String
    public var friendlyName: String
    public var manufacturer: String
    public var modelName: String
    /// The unique device name, `uuid:…`: the device's stable id.
    public var udn: String
    public var services: [ServiceReference]

    public init(deviceType: String, friendlyName: String, manufacturer: String = "", modelName: String = "", udn: String, services: [ServiceReference] = []) {
        self.deviceType = deviceType
        self.friendlyName = friendlyName
        self.manufacturer = manufacturer
        self.modelName = modelName
        self.udn = udn
        self.services = services
    }

    public func service(_ kind: String) -> ServiceReference? { services.first { $0.isKind(kind) } }

    /// Whether the device is a MediaRenderer with AVTransport and RenderingControl.
    public var isMediaRenderer: Bool {
        deviceType.hasPrefix("urn:schemas-upnp-org:device:MediaRenderer:") && service("AVTransport") != nil && service("RenderingControl") != nil
    }

    /// Parses the description fetched from `location`. Service URLs resolve
    /// against `URLBase` or `location` and must stay on the location's host.
    /// Looks for a MediaRenderer among embedded devices, else takes the root device.
    public static func parse(_ bytes: [UInt8], location: HTTPURL, parser: XMLParser = XMLParser()) throws(XMLError) -> DeviceDescription {
        let root = try parser.parse(bytes)
        guard root.name == "root", root.namespace == UPnPNamespace.device else {
            throw XMLError(.unexpectedContent, "root element is \(root.name) in \(root.namespace ?? "no namespace"), not a UPnP device description")
        }
        var base = location
        if let declared = root.value("URLBase") {
            guard let parsed = HTTPURL(declared), parsed.host == location.host else {
                throw XMLError(.unexpectedContent, "URLBase \(declared) is not on the device's host \(location.host)")
            }
            base = parsed
        }
        guard let top = root.child("device") else { throw XMLError(.unexpectedContent, "no device element") }
        let device = findRenderer(top, depth: 0) ?? top
        guard let deviceType = device.value("deviceType") else { throw XMLError(.unexpectedContent, "no deviceType") }
        guard let udn = device.value("UDN"), udn.lowercased().hasPrefix("uuid:"), udn.count <= 128 else {
            throw XMLError(.unexpectedContent, "no valid UDN")
        }
        var services: [ServiceReference] = []
        for service in device.child("serviceList")?.children(named: "service") ?? [] {
            guard let type = service.value("serviceType"), let scpd = service.value("SCPDURL"), let control = service.value("controlURL") else {
                continue
            }
            guard let scpdURL = base.resolve(scpd), let controlURL = base.resolve(control),
                scpdURL.host == location.host, controlURL.host == location.host
            else { throw XMLError(.unexpectedContent, "service \(type) points off the device's host") }
            var eventURL: HTTPURL?
            if let event = service.value("eventSubURL") {
                guard let resolved = base.resolve(event), resolved.host == location.host else {
                    throw XMLError(.unexpectedContent, "service \(type) events point off the device's host")
                }
                eventURL = resolved
            }
            services.append(ServiceReference(
                serviceType: type, serviceID: service.value("serviceId") ?? type, scpdURL: scpdURL, controlURL: controlURL,
                eventSubscriptionURL: eventURL))
        }
        return DeviceDescription(
            deviceType: deviceType, friendlyName: device.value("friendlyName") ?? udn, manufacturer: device.value("manufacturer") ?? "",
            modelName: device.value("modelName") ?? "", udn: udn, services: services)
    }

    private static func findRenderer(_ device: XMLElement, depth: Int) -> XMLElement? {
        if device.value("deviceType")?.hasPrefix("urn:schemas-upnp-org:device:MediaRenderer:") == true { return device }
        guard depth < 4 else { return nil }
        for embedded in device.child("deviceList")?.children(named: "device") ?? [] {
            if let found = findRenderer(embedded, depth: depth + 1) { return found }
        }
        return nil
    }
}

/// What a service's SCPD declares that a control point needs.
public struct ServiceDescription: Sendable, Hashable {
    /// The actions by name.
    public var actions: Set<String>
    /// Allowed ranges of numeric state variables (e.g. `Volume`).
    public var ranges: [String: ClosedRange<Int>]

    public init(actions: Set<String> = [], ranges: [String: ClosedRange<Int>] = [:]) {
        self.actions = actions
        self.ranges = ranges
    }

    public static func parse(_ bytes: [UInt8], parser: XMLParser = XMLParser()) throws(XMLError) -> ServiceDescription {
        let root = try parser.parse(bytes)
        guard root.name == "scpd", root.namespace == UPnPNamespace.service else {
            throw XMLError(.unexpectedContent, "root element is \(root.name) in \(root.namespace ?? "no namespace"), not an SCPD")
        }
        var description = ServiceDescription()
        for action in root.child("actionList")?.children(named: "action") ?? [] {
            if let name = action.value("name") { description.actions.insert(name) }
        }
        for variable in root.child("serviceStateTable")?.children(named: "stateVariable") ?? [] {
            guard let name = variable.value("name"), let range = variable.child("allowedValueRange") else { continue }
            // Bounded to 32 bits (UPnP ranges are i4/ui2 at most): the renderer does arithmetic on
            // the span, and a range near Int.min...Int.max would overflow there.
            let bounds = Int(Int32.min)...Int(UInt32.max)
            guard let low = range.value("minimum").flatMap({ Int($0) }), let high = range.value("maximum").flatMap({ Int($0) }), low <= high,
                bounds.contains(low), bounds.contains(high)
            else {
                throw XMLError(.unexpectedContent, "state variable \(name) has an invalid allowed range")
            }
            description.ranges[name] = low...high
        }
        return description
    }
}
