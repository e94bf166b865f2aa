import RoutingModel
import Testing

@testable import RouteSystem

/// ``VolumeRouting`` on values: what each volume control gets.
@Suite struct VolumeRoutingRulesTests {
    static func device(_ control: OutputDeviceDescription.VolumeControl, canMute: Bool = false) -> OutputDeviceDescription {
        OutputDeviceDescription(id: "d", displayName: "Speaker", capabilities: [.urlPlayback], volumeControl: control, canMute: canMute)!
    }

    @Test func absoluteDevicesTakeClampedLevelsOthersARefusal() throws {
        #expect(try VolumeRouting.level(0.4, on: Self.device(.absolute)) == 0.4)
        #expect(try VolumeRouting.level(7, on: Self.device(.absolute)) == 1)
        #expect(try VolumeRouting.level(-1, on: Self.device(.absolute)) == 0)
        #expect(throws: MediaDeviceError.self) { try VolumeRouting.level(.nan, on: Self.device(.absolute)) }
        #expect(throws: MediaDeviceError(.volumeControlUnsupported, "Speaker supports only relative volume changes; use changeVolume(by:)")) {
            try VolumeRouting.level(0.5, on: Self.device(.relative))
        }
        #expect(throws: MediaDeviceError(.volumeControlUnsupported, "Speaker has no volume control")) {
            try VolumeRouting.level(0.5, on: Self.device(.none))
        }
    }

    @Test func stepsGoAsStepsOrAsLevelsByTheConfiguredStep() throws {
        #expect(try VolumeRouting.change(by: -2, on: Self.device(.relative), absoluteStep: 0.05) == .steps(-2))
        #expect(try VolumeRouting.change(by: 3, on: Self.device(.absolute), absoluteStep: 0.05) == .levelBy(3 * 0.05))
        #expect(throws: MediaDeviceError.self) { try VolumeRouting.change(by: 1, on: Self.device(.none), absoluteStep: 0.05) }
        #expect(throws: MediaDeviceError(.unsupported, "Speaker cannot be muted")) { try VolumeRouting.checkMute(on: Self.device(.absolute)) }
        try VolumeRouting.checkMute(on: Self.device(.absolute, canMute: true))
    }
}
