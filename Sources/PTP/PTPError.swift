/// Why bytes are not a PTP message MediaRoute can use.
public struct PTPError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
