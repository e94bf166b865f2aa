

/// A generic netlink payload: `genlmsghdr` (command, version) then attributes.
public struct GenericNetlinkPayload: Sendable, Hashable {
    public var command: UInt8
    public var version: UInt8
    public var attributes: [NetlinkAttribute]

    public init(command: UInt8, version: UInt8 = 1, attributes: [NetlinkAttribute]) {
        self.command = command
        self.version = version
        self.attributes = attributes
    }

    public static func parse(_ payload: [UInt8]) throws(NetlinkParseError) -> GenericNetlinkPayload {
        guard payload.count >= 4 else { throw NetlinkParseError(.truncated, "genlmsghdr") }
        return GenericNetlinkPayload(command: payload[0], version: payload[1], attributes: try NetlinkAttribute.parse(Array(payload[4...])))
    }

    public var bytes: [UInt8] { [command, version, 0, 0] + attributes.flatMap(\.bytes) }
}
