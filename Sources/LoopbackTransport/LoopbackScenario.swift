#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A set of simulated devices and transport-wide faults, declared in code or loaded from JSON.
public struct LoopbackScenario: Sendable, Hashable, Codable {
    public var devices: [LoopbackDeviceSpec]
    /// When set, discovery fails with this message.
    public var discoveryFailure: String?

    public init(devices: [LoopbackDeviceSpec], discoveryFailure: String? = nil) {
        self.devices = devices
        self.discoveryFailure = discoveryFailure
    }

    /// A scenario read from a JSON file.
    /// - Throws: ``LoopbackScenarioError`` naming the file and what is wrong with it.
    public static func load(fromFile path: String) throws -> LoopbackScenario {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw LoopbackScenarioError(message: "cannot read scenario \(path): \(error)")
        }
        return try decode(data, source: path)
    }

    /// A scenario decoded from JSON bytes; device names must be unique and non-empty.
    public static func decode(_ data: Data, source: String = "scenario") throws -> LoopbackScenario {
        let scenario: LoopbackScenario
        do {
            scenario = try JSONDecoder().decode(LoopbackScenario.self, from: data)
        } catch {
            throw LoopbackScenarioError(message: "\(source) is not a valid scenario: \(error)")
        }
        var seen = Set<String>()
        for device in scenario.devices {
            guard !device.name.isEmpty else {
                throw LoopbackScenarioError(message: "\(source): a device has an empty name")
            }
            guard seen.insert(device.name).inserted else {
                throw LoopbackScenarioError(message: "\(source): device name \(device.name) is used twice")
            }
        }
        return scenario
    }

    /// The demo's devices: a TV that asks for PIN 1234 and a speaker.
    public static let standard = LoopbackScenario(devices: [
        LoopbackDeviceSpec(
            name: "living-room-tv", displayName: "Living Room TV", kind: .tv, pin: "1234",
            signalStrength: -40, attributes: ["model": "Loopback TV 1"], services: ["urn:mediaroute:loopback:tv"],
            volume: 0.4),
        LoopbackDeviceSpec(
            name: "kitchen-speaker", displayName: "Kitchen Speaker", kind: .speaker,
            signalStrength: -62, attributes: ["model": "Loopback Speaker 1"],
            services: ["urn:mediaroute:loopback:speaker"], volume: 0.5),
    ])
}

extension LoopbackScenario {
    /// Two TVs without PINs, for group playback.
    public static let groupDemo = LoopbackScenario(devices: [
        LoopbackDeviceSpec(name: "den-tv", displayName: "Den TV", kind: .tv, signalStrength: -45, volume: 0.5),
        LoopbackDeviceSpec(name: "bedroom-tv", displayName: "Bedroom TV", kind: .tv, signalStrength: -58, volume: 0.3),
    ])
}
