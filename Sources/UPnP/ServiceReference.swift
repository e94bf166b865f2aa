public import IPNetwork

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
