

/// `Transport` of a SETUP answer: the receiver's ports.
public struct RAOPTransportPorts: Sendable, Hashable {
    public var server: Int
    public var control: Int
    public var timing: Int

    public init(server: Int, control: Int, timing: Int) {
        self.server = server
        self.control = control
        self.timing = timing
    }

    /// From `RTP/AVP/UDP;unicast;mode=record;server_port=6001;control_port=6002;timing_port=6003`;
    /// nil when a port is missing or not a UDP port number. `timing_port` may be absent (0).
    public init?(transport: String) {
        var ports: [String: Int] = [:]
        for parameter in transport.split(separator: ";") {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, let value = Int(pair[1].trimmingWhitespace), (1...65_535).contains(value) else { continue }
            ports[pair[0].trimmingWhitespace.lowercased()] = value
        }
        guard let server = ports["server_port"], let control = ports["control_port"] else { return nil }
        self.init(server: server, control: control, timing: ports["timing_port"] ?? 0)
    }
}
