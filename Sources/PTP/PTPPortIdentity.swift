/// A PTP port: the clock's 64-bit identity (from its MAC: xx:xx:xx:FF:FE:xx:xx:xx) and a port number.
public struct PTPPortIdentity: Sendable, Hashable, CustomStringConvertible {
    public static let length = 10

    public var clock: UInt64
    public var port: UInt16

    public init(clock: UInt64, port: UInt16 = 1) {
        self.clock = clock
        self.port = port
    }

    init(bytes: [UInt8]) {
        clock = bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        port = UInt16(bytes[8]) << 8 | UInt16(bytes[9])
    }

    /// The identity EUI-64 makes of a 48-bit hardware address.
    public init(hardwareAddress: [UInt8], port: UInt16 = 1) {
        let mac = hardwareAddress.count == 6 ? hardwareAddress : [UInt8](repeating: 0, count: 6)
        self.init(clock: [mac[0], mac[1], mac[2], 0xFF, 0xFE, mac[3], mac[4], mac[5]].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }, port: port)
    }

    public var bytes: [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: clock >> (56 - 8 * UInt64($0))) } + [UInt8(port >> 8), UInt8(truncatingIfNeeded: port)]
    }

    public var description: String {
        let hex = String(clock, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex + "-\(port)"
    }
}
