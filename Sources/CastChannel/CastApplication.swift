#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif

/// One application running on a receiver.
public struct CastApplication: Sendable, Equatable, Decodable {
    public struct Namespace: Sendable, Equatable, Decodable {
        public var name: String
    }

    public var appId: String
    public var displayName: String?
    /// What `STOP` names.
    public var sessionId: String
    /// The destination of the application's own messages (media, its namespace).
    public var transportId: String
    public var statusText: String?
    public var namespaces: [Namespace]?

    public init(appId: String, displayName: String? = nil, sessionId: String, transportId: String, statusText: String? = nil, namespaces: [String] = []) {
        self.appId = appId
        self.displayName = displayName
        self.sessionId = sessionId
        self.transportId = transportId
        self.statusText = statusText
        self.namespaces = namespaces.map(Namespace.init(name:))
    }
}
