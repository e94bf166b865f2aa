

/// Why bytes from a receiver are not an RTSP response.
public struct RTSPError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
