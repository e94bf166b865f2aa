import BluetoothAudio
import Testing

/// The Volume Control Service on bytes: Volume State decoded, control point
/// operations encoded with the change counter, our writes and the speaker's
/// notifications folded into one state.
@Suite struct VolumeControlTests {
    @Test func theVolumeStateIsDecodedAndShortValuesRefused() {
        #expect(VolumeControl.State([0x80, 0x01, 0x07]) == VolumeControl.State(volume: 128, muted: true, changeCounter: 7))
        // A later version may add bytes: the first three are still the state.
        #expect(VolumeControl.State([0xFF, 0x00, 0xFE, 0x55]) == VolumeControl.State(volume: 255, muted: false, changeCounter: 254))
        #expect(VolumeControl.State([0x10, 0x00]) == nil)
        #expect(VolumeControl.State([]) == nil)
        #expect(VolumeControl.State(volume: 3, muted: true, changeCounter: 9).bytes == [3, 1, 9])
    }

    @Test func nothingIsWrittenBeforeTheStateIsKnown() {
        let control = VolumeControl()
        #expect(control.write(.mute) == nil)
        #expect(control.level == 0 && !control.isMuted)
    }

    @Test func operationsCarryTheChangeCounterAndAbsoluteItsVolume() {
        var control = VolumeControl()
        #expect(control.received([0x40, 0x00, 0x11]) == true)
        #expect(control.write(.relativeUp) == [0x01, 0x11])
        #expect(control.write(.mute) == [0x06, 0x11])
        #expect(control.write(.setAbsolute, volume: 0xC8) == [0x04, 0x11, 0xC8])
        #expect(control.write(.setAbsolute) == nil, "an absolute volume needs its operand")
    }

    @Test func anAcceptedWriteMovesTheCounterOnAndWrapsAt256() {
        var control = VolumeControl(state: .init(volume: 10, muted: false, changeCounter: 0xFF))
        control.accepted(.mute)
        #expect(control.state == .init(volume: 10, muted: true, changeCounter: 0x00))
        control.accepted(.unmuteRelativeUp)
        #expect(control.state == .init(volume: 10, muted: false, changeCounter: 0x01), "the step's size is the speaker's")
        control.accepted(.setAbsolute, volume: 200)
        #expect(control.state == .init(volume: 200, muted: false, changeCounter: 0x02))
        #expect(control.write(.relativeDown) == [0x00, 0x02])
    }

    @Test func aNotificationIsNewsOnlyWhenVolumeOrMuteChanged() {
        var control = VolumeControl()
        #expect(control.received([0x20, 0x00, 0x01]) == true, "the first state is news")
        #expect(control.received([0x20, 0x00, 0x02]) == false, "a new counter alone is not")
        #expect(control.state?.changeCounter == 2)
        #expect(control.received([0x21, 0x00, 0x03]) == true)
        #expect(control.received([0x21, 0x01, 0x04]) == true)
        // Malformed: refused, and the state stays.
        #expect(control.received([0x99]) == nil)
        #expect(control.state == .init(volume: 0x21, muted: true, changeCounter: 4))
    }

    @Test func theSpeakersNotificationConfirmsOurOwnWrite() {
        var control = VolumeControl()
        #expect(control.received([0x40, 0x00, 0x00]) == true)
        control.accepted(.setAbsolute, volume: 102)
        #expect(control.level == Float(102) / 255, "kept in step while the notification is on its way")
        // A real speaker (bumble's VCS in the HIL rig) answers the write first, then notifies:
        // the notification is what tells listeners the speaker took it.
        #expect(control.received([102, 0x00, 0x01]) == true)
        #expect(control.received([102, 0x00, 0x01]) == false, "said once")
        control.accepted(.mute)
        #expect(control.received([102, 0x01, 0x02]) == true)
    }

    @Test func aStepUnmutesWhenMutedAndLevelsMapToTheFullRange() {
        var control = VolumeControl(state: .init(volume: 0, muted: true, changeCounter: 0))
        #expect(control.step(up: true) == .unmuteRelativeUp && control.step(up: false) == .unmuteRelativeDown)
        control.received([0xFF, 0x00, 0x01])
        #expect(control.step(up: true) == .relativeUp && control.step(up: false) == .relativeDown)
        #expect(control.level == 1)
        #expect(VolumeControl.absoluteVolume(0) == 0 && VolumeControl.absoluteVolume(1) == 255 && VolumeControl.absoluteVolume(0.5) == 128)
        #expect(VolumeControl.absoluteVolume(-2) == 0 && VolumeControl.absoluteVolume(7) == 255 && VolumeControl.absoluteVolume(.nan) == 0)
    }

    @Test func everyOpcodeHasItsAssignedNumber() {
        #expect(VolumeControl.Opcode.allCases.map(\.rawValue) == [0, 1, 2, 3, 4, 5, 6])
        #expect(VolumeControl.invalidChangeCounter == 0x80 && VolumeControl.opcodeNotSupported == 0x81)
    }
}
