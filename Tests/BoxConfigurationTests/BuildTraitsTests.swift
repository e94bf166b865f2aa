import BoxConfiguration
import Testing

/// A protocol left out at build time: its configuration keys are one notice each and have no
/// effect, so one file serves boxes built with different protocols.
@Suite struct BuildTraitsTests {
    static let text = """
        [daemon]
        airplay-latency = 1.5
        log-level = debug

        [audio]
        pipewire = yes
        group-offsets = Porch: -5

        [lan]
        cast-app-namespaces = ABCD1234: urn:x-cast:com.example.kiosk
        role = primary

        [wifi]
        scan-mode = p2p
        setup-ssids = Speaker-*

        [bluetooth]
        a2dp-source = no
        """

    @Test func aMinimalBuildSaysOneLineForEachLeftOutKeyAndIgnoresIt() throws {
        let configuration = try DaemonConfiguration.parse(Self.text, file: "box.conf", traits: ["Bluetooth"])
        #expect(configuration.notices == [
            "box.conf:2: airplay-latency in [daemon] is ignored: this build leaves AirPlay out (built without the AirPlay trait)",
            "box.conf:6: pipewire in [audio] is ignored: this build leaves PipeWire out (built without the PipeWire trait)",
            "box.conf:10: cast-app-namespaces in [lan] is ignored: this build leaves Cast out (built without the Cast trait)",
            "box.conf:13: [wifi] is ignored: this build leaves WiFi out (built without the WiFi trait)",
        ])
        // What the build has still applies; what it left out kept its default.
        #expect(configuration.daemon == ["log-level": "debug"])
        #expect(configuration.groupOffsets == ["Porch": -5])
        #expect(!configuration.bluetoothA2DPSource)
        #expect(configuration.pipeWire == .automatic && configuration.castApplicationNamespaces.isEmpty && configuration.wifiSetupSSIDs.isEmpty)
        #expect(configuration.wifi == DaemonConfiguration().wifi)
    }

    @Test func aFullBuildTakesEveryKeyWithoutNotice() throws {
        let configuration = try DaemonConfiguration.parse(Self.text, file: "box.conf", traits: BuildTraits.all)
        #expect(configuration.notices.isEmpty)
        #expect(configuration.daemon["airplay-latency"] == "1.5" && configuration.pipeWire == .on)
        #expect(configuration.castApplicationNamespaces == ["ABCD1234": "urn:x-cast:com.example.kiosk"])
        #expect(configuration.wifi.scanMode == .p2p && configuration.wifiSetupSSIDs == ["Speaker-*"])
    }

    /// `[video] pipewire`: the route's video node, on by default; a build without PipeWire says so.
    @Test func theVideoNodeIsOnByDefaultAndItsKeyIsChecked() throws {
        #expect(try DaemonConfiguration.parse("", file: "box.conf", traits: BuildTraits.all).pipeWireVideo)
        #expect(try !DaemonConfiguration.parse("[video]\npipewire = no\n", file: "box.conf", traits: BuildTraits.all).pipeWireVideo)
        #expect(throws: ConfigurationError.self) { try DaemonConfiguration.parse("[video]\npipewire = maybe\n", file: "box.conf", traits: BuildTraits.all) }
        #expect(throws: ConfigurationError.self) { try DaemonConfiguration.parse("[video]\nencoder = vaapi\n", file: "box.conf", traits: BuildTraits.all) }
        let minimal = try DaemonConfiguration.parse("[video]\npipewire = no\n", file: "box.conf", traits: ["Bluetooth"])
        #expect(minimal.notices == ["box.conf:2: pipewire in [video] is ignored: this build leaves PipeWire out (built without the PipeWire trait)"])
        #expect(minimal.pipeWireVideo)
    }

    /// `[video] encoders`: libavcodec's encoders tried before OpenH264 (the default list when
    /// absent, OpenH264 alone when empty or `openh264`); names are checked.
    @Test func theVideoEncodersAreReadAndChecked() throws {
        #expect(try DaemonConfiguration.parse("", file: "box.conf", traits: BuildTraits.all).videoEncoders == nil)
        let two = try DaemonConfiguration.parse("[video]\nencoders = h264_v4l2m2m, h264_omx\n", file: "box.conf", traits: BuildTraits.all)
        #expect(two.videoEncoders == ["h264_v4l2m2m", "h264_omx"])
        #expect(try DaemonConfiguration.parse("[video]\nencoders = openh264\n", file: "box.conf", traits: BuildTraits.all).videoEncoders == [])
        #expect(throws: ConfigurationError.self) { try DaemonConfiguration.parse("[video]\nencoders = ../lib\n", file: "box.conf", traits: BuildTraits.all) }
    }

    /// A left-out section's keys are still read as lines: a malformed one is refused as before.
    @Test func aLeftOutSectionStillNeedsWellFormedLines() {
        #expect(throws: ConfigurationError.self) {
            try DaemonConfiguration.parse("[wifi]\nscan-mode\n", file: "box.conf", traits: [])
        }
    }

    /// The tests are built with every protocol (`swift build`'s default traits).
    @Test func theTestBuildHasEveryProtocol() {
        #expect(BuildTraits.included == BuildTraits.all && BuildTraits.leftOut.isEmpty)
    }
}
