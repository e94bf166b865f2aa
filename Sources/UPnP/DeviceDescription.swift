public import IPNetwork

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
