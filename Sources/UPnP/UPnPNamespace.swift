import IPNetwork

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
