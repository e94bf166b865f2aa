

/// One SOAP action of a MediaRenderer's services, typed: the service it belongs to,
/// its name and its arguments in the order the service description lists them.
/// Everything MediaRoute asks a renderer is one of these, so a misspelt action or
/// argument is a compile error, not a fault from the device.
public protocol RendererAction: Sendable {
    /// The service kind as in the description (`AVTransport`, `RenderingControl`, `ConnectionManager`).
    static var service: String { get }
    /// The action's name.
    var name: String { get }
    /// The arguments, in the order of the service's SCPD.
    var arguments: [(name: String, value: String)] { get }
}
