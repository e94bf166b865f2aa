import MediaClock
import MediaDevice
import RoutingModel
import Testing

@Suite struct ProtocolTypeValidationTests {
    @Test(arguments: ["org.mediaroute.upnp", "com.example.sharing-protocol", "a.b", "org.x2.y"])
    func reverseDNSIdsAreAccepted(id: String) throws {
        try MediaSharingProtocol(id, displayName: "X").validate()
    }

    @Test(arguments: ["", "loopback", "org..x", ".org.x", "org.x.", "org.-x", "org.x-", "1org.x", "org.ex ample", "org.é.x"])
    func malformedIdsAreRefused(id: String) {
        #expect(throws: MediaDeviceError.self) { try MediaSharingProtocol(id, displayName: "X").validate() }
        do {
            try MediaSharingProtocol(id, displayName: "X").validate()
        } catch let error as MediaDeviceError {
            #expect(error.code == .invalidProtocolType)
            #expect(error.message.contains("protocol id"))
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func anEmptyDisplayNameIsRefused() {
        #expect(throws: MediaDeviceError.self) { try MediaSharingProtocol("org.x", displayName: "  ").validate() }
    }
}

@Suite struct MediaOutputDeviceTests {
    @Test func emptyIdOrNameGivesNoDevice() {
        #expect(MediaOutputDevice(id: "", displayName: "TV", capabilities: [.urlPlayback]) == nil)
        #expect(MediaOutputDevice(id: "x", displayName: " ", capabilities: [.urlPlayback]) == nil)
        #expect(MediaOutputDevice(id: "x", displayName: "TV", capabilities: [.urlPlayback]) != nil)
    }

    @Test func deviceTypesKnowVideoAndSymbols() {
        #expect(MediaOutputDevice.DeviceType.tv.isVideo)
        #expect(!MediaOutputDevice.DeviceType.speaker.isVideo)
        #expect(MediaOutputDevice.DeviceType.speaker.symbolName == "hifispeaker")
    }
}

@Suite struct PlaybackControlTests {
    @Test func positionIsExtrapolatedFromTheLastReportAndSpeed() {
        let clock = ManualHostClock()
        let control = PlaybackControl(clock: clock)
        control.update {
            $0.state = .playing
            $0.position = 10
            $0.playbackSpeed = 2
            $0.timeRange = 0...100
        }
        clock.advance(by: .seconds(3))
        #expect(control.currentPlaybackPosition == 16)
        clock.advance(by: .seconds(100))
        #expect(control.currentPlaybackPosition == 100, "clamped to the time range")
    }

    @Test func settersQueueCommandsInOrderAndUpdateStateAtOnce() async {
        let clock = ManualHostClock()
        let control = PlaybackControl(clock: clock)
        control.update { $0.state = .paused; $0.timeRange = 0...60 }
        control.isPlaying = true
        #expect(control.isPlaying)
        control.currentPlaybackPosition = 30
        control.playbackSpeed = 1.5
        control.volume = 7
        control.playbackSpeed = 0
        control.finish()
        var received: [PlaybackCommand] = []
        for await command in control.commands { received.append(command) }
        #expect(received == [.play, .seek(to: 30), .setSpeed(1.5), .setVolume(1), .pause])
        #expect(control.volume == 1)
        #expect(!control.isPlaying)
    }

    @Test func seekingNeverStartsPlaybackAndIsClamped() {
        let control = PlaybackControl(clock: ManualHostClock())
        control.update { $0.state = .paused; $0.timeRange = 0...50 }
        control.seek(to: 80)
        #expect(control.currentPlaybackPosition == 50)
        #expect(!control.isPlaying)
        control.seek(to: .nan)
        #expect(control.currentPlaybackPosition == 50)
    }

    @Test func mediaSelectionAcceptsOnlyOfferedOptions() {
        let control = PlaybackControl(clock: ManualHostClock())
        let english = MediaSelectionOption(id: "en", displayName: "English", languageTag: "en")
        control.update { $0.legibleOptions = [english] }
        control.currentLegibleOption = MediaSelectionOption(id: "fr", displayName: "French")
        #expect(control.currentLegibleOption == nil)
        control.currentLegibleOption = english
        #expect(control.currentLegibleOption == english)
        control.currentLegibleOption = nil
        #expect(control.currentLegibleOption == nil)
    }

    @Test func observersSeeTheCurrentStateThenEveryChange() async {
        let control = PlaybackControl(clock: ManualHostClock())
        let changes = control.changes()
        control.update { $0.state = .playing }
        control.pause()
        control.finish()
        var states: [PlaybackSnapshot.State] = []
        for await snapshot in changes { states.append(snapshot.state) }
        #expect(states == [.idle, .playing, .paused])
    }
}
