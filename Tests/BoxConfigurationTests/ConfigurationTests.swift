import BoxConfiguration
import Foundation
import Testing

@Suite struct ConfigurationTests {
    @Test func aFullFileIsRead() throws {
        let text = """
            # mediarouted on the kitchen box
            [daemon]
            bus = system
            log-level = notice
            push-listen = "127.0.0.1:7391"
            mpris = off

            [lan]
            enabled = yes
            role = secondary

            [wifi]
            enabled = no
            scan-mode = p2p

            [bluetooth]
            adapter = hci1   ; the USB dongle
            """.replacingOccurrences(of: "   ; the USB dongle", with: "")
        let configuration = try DaemonConfiguration.parse(text, file: "/etc/mediaroute/mediaroute.conf")
        #expect(configuration.daemon == ["bus": "system", "log-level": "notice", "push-listen": "127.0.0.1:7391", "mpris": "off"])
        #expect(configuration.lan == TransportSettings(enabled: true, role: .secondary))
        #expect(configuration.wifi.enabled == false)
        #expect(configuration.wifi.scanMode == .p2p)
        #expect(configuration.wifi.role == .secondary)
        #expect(configuration.bluetooth.preferredAdapter == "hci1")
    }

    @Test func setupSSIDPatternsAreReadForWiFi() throws {
        let configuration = try DaemonConfiguration.parse("[wifi]\nsetup-ssids = Sonos_*, TV-????-Setup ,Living room?", file: "box.conf")
        #expect(configuration.wifiSetupSSIDs == ["Sonos_*", "TV-????-Setup", "Living room?"])
        #expect(try DaemonConfiguration.parse("[wifi]\nenabled = yes", file: "box.conf").wifiSetupSSIDs.isEmpty)
    }

    @Test func castApplicationNamespacesAreReadForTheLAN() throws {
        let configuration = try DaemonConfiguration.parse("[lan]\ncast-app-namespaces = ABCD1234: urn:x-cast:com.example.game , B2: urn:x-cast:b", file: "box.conf")
        #expect(configuration.castApplicationNamespaces == ["ABCD1234": "urn:x-cast:com.example.game", "B2": "urn:x-cast:b"])
        for bad in ["ABCD1234", "ABCD1234: http://x", "bad id: urn:x-cast:x", "A: urn:x-cast:", "A: urn:x-cast:with space"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try DaemonConfiguration.parse("[lan]\ncast-app-namespaces = \(bad)", file: "box.conf") }
        }
    }

    @Test func airPlayProtocolOverridesAreReadByNameOrAddress() throws {
        let configuration = try DaemonConfiguration.parse("[lan]\nairplay-protocols = Den: TV: airplay1, 10:00:00:00:00:01: AirPlay2-NTP ,Porch: airplay2", file: "box.conf")
        #expect(configuration.airPlayProtocols == ["Den: TV": "airplay1", "10:00:00:00:00:01": "airplay2-ntp", "Porch": "airplay2"])
        for bad in ["Den", "Den: airplay3", ": airplay1"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try DaemonConfiguration.parse("[lan]\nairplay-protocols = \(bad)", file: "box.conf") }
        }
    }

    @Test func groupOffsetsAndTheAirPlayLatencyAreRead() throws {
        let configuration = try DaemonConfiguration.parse(
            "[audio]\ngroup-offsets = Porch AirPlay: -5, Den: TV: 12.5 \n[daemon]\nairplay-latency = 0.5", file: "box.conf")
        #expect(configuration.groupOffsets == ["Porch AirPlay": -5, "Den: TV": 12.5])
        #expect(configuration.groupOffsetDurations["Porch AirPlay"] == .milliseconds(-5))
        #expect(configuration.daemon["airplay-latency"] == "0.5")
    }

    @Test func liveStreamFormatsFramingsAndLatenciesAreRead() throws {
        let configuration = try DaemonConfiguration.parse(
            "[audio]\nlive-formats = Den: TV: wav\nlive-framing = chunked, Hall TV: length\nlive-latency = gmediarender: 100, Den: TV: 1500\nlive-prime = Den: TV: 1000, gmediarender: 0",
            file: "box.conf")
        #expect(configuration.liveFormats == ["Den: TV": "wav"])
        #expect(configuration.liveFraming == "chunked")
        #expect(configuration.liveFramings == ["Hall TV": "length"])
        #expect(configuration.liveLatencies == ["gmediarender": 100, "Den: TV": 1500])
        #expect(configuration.livePrimes == ["Den: TV": 1000, "gmediarender": 0])
    }

    @Test func aMissingDefaultFileGivesTheDefaultsButAMissingNamedFileIsAnError() throws {
        #expect(try DaemonConfiguration.load(path: "/nonexistent/mediaroute.conf") == DaemonConfiguration())
        #expect(throws: ConfigurationError(file: "/nonexistent/mediaroute.conf", line: 0, "cannot be read")) {
            try DaemonConfiguration.load(path: "/nonexistent/mediaroute.conf", required: true)
        }
    }

    @Test(arguments: [
        ("[daemon]\nbus = system\ncolour = blue", 3, "unknown key colour in [daemon]"),
        ("bus = system", 1, "bus is outside a section"),
        ("[daemon]\n\n# fine\n[speakers]", 4, "unknown section [speakers]"),
        ("[wifi]\nscan-mode = loud", 2, "scan-mode must be off, passive, active, p2p, not \"loud\""),
        ("[lan]\nenabled = maybe", 2, "enabled must be yes or no"),
        ("[lan]\nrole = boss", 2, "role must be primary, secondary, standby"),
        ("[daemon]\nmpris = sometimes", 2, "mpris must be on or off"),
        ("[daemon]\nlog-level = loud", 2, "log-level must be"),
        ("[daemon]\nbus = a\nbus = b", 3, "bus is set twice in [daemon]"),
        ("[daemon]\njust words", 2, "expected key = value"),
        ("[daemon", 1, "a section header ends with ]"),
        ("[lan]\nscan-mode = p2p", 2, "unknown key scan-mode in [lan]"),
        ("[bluetooth]\nadapter = ../../etc", 2, "adapter must be a controller name"),
        ("[daemon]\nname =", 2, "name needs a value"),
        ("[wifi]\nsetup-ssids = ,", 2, "setup-ssids takes 1 to 32 SSID patterns"),
        ("[wifi]\nsetup-ssids = A-name-that-is-longer-than-thirty-two-bytes", 2, "is not an SSID pattern"),
        ("[wifi]\nsetup-ssids = bell\u{07}", 2, "is not an SSID pattern"),
        ("[lan]\nsetup-ssids = Sonos_*", 2, "unknown key setup-ssids in [lan]"),
        ("[audio]\ngroup-offsets = Porch AirPlay", 2, "group-offsets takes NAME: MILLISECONDS"),
        ("[audio]\ngroup-offsets = Porch: soon", 2, "is not NAME: MILLISECONDS"),
        ("[audio]\ngroup-offsets = Porch: 5000", 2, "at most ±1000"),
        ("[audio]\ngroup-offsets = : 5", 2, "is not NAME: MILLISECONDS"),
        ("[audio]\nlive-formats = Den: opus", 2, "is not NAME: lpcm|wav|flac|mp3|aac"),
        ("[audio]\nlive-formats = wav", 2, "is not NAME: lpcm|wav"),
        ("[audio]\nlive-framing = Den: sometimes", 2, "is not [NAME:] close|chunked|length"),
        ("[audio]\nlive-latency = Den: -5", 2, "is not NAME: MILLISECONDS (0 to 10000)"),
        ("[audio]\nlive-latency = 100", 2, "is not NAME: MILLISECONDS"),
        ("[audio]\nlive-prime = Den: 6000", 2, "is not NAME: MILLISECONDS (0 to 5000)"),
        ("[audio]\nlive-prime = 500", 2, "is not NAME: MILLISECONDS"),
    ])
    func mistakesNameTheFileAndLine(text: String, line: Int, message: String) {
        do {
            _ = try DaemonConfiguration.parse(text, file: "box.conf")
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.file == "box.conf")
            #expect(error.line == line)
            #expect(error.message.contains(message), "\(error)")
            #expect(error.description.hasPrefix("box.conf:\(line): "))
        }
    }

    @Test func udevPropertiesOverrideTheConfigurationPerDevice() throws {
        var configuration = DaemonConfiguration()
        configuration.wifi = TransportSettings(enabled: true, role: .secondary, scanMode: .passive)
        configuration.bluetooth.preferredAdapter = "hci1"
        let wifi = AdapterRecord(subsystem: "net", name: "wlan0", devtype: "wlan", properties: ["MEDIAROUTE_WIFI_SCAN": "p2p", "MEDIAROUTE_ROLE": "primary"])
        let settings = try AdapterSettings.resolve(wifi, configuration: configuration).get()
        #expect(settings.transport == .wifi)
        #expect(settings.scanMode == .p2p)
        #expect(settings.role == .primary)
        #expect(settings.enabled)

        let disabled = AdapterRecord(subsystem: "net", name: "eth0", devtype: "", properties: ["MEDIAROUTE_TRANSPORT": "lan", "MEDIAROUTE_ENABLED": "0"])
        #expect(try AdapterSettings.resolve(disabled, configuration: configuration).get().enabled == false)
        // Without udev (no properties), the shipped rules' classification applies.
        #expect(try AdapterSettings.resolve(AdapterRecord(subsystem: "net", name: "veth0", devtype: ""), configuration: configuration).get().transport == .lan)
        #expect(try AdapterSettings.resolve(AdapterRecord(subsystem: "net", name: "lo", devtype: ""), configuration: configuration).get().transport == .none)
        #expect(try AdapterSettings.resolve(AdapterRecord(subsystem: "net", name: "br0", devtype: "bridge"), configuration: configuration).get().transport == .none)
        // The configured Bluetooth controller is used; the other waits in reserve.
        #expect(try AdapterSettings.resolve(AdapterRecord(subsystem: "bluetooth", name: "hci0", devtype: "host"), configuration: configuration).get().role == .standby)
        #expect(try AdapterSettings.resolve(AdapterRecord(subsystem: "bluetooth", name: "hci1", devtype: "host"), configuration: configuration).get().role == .primary)

        let bad = AdapterRecord(subsystem: "net", name: "eth1", devtype: "", properties: ["MEDIAROUTE_ENABLED": "yes"])
        guard case .failure(let problem) = AdapterSettings.resolve(bad, configuration: configuration) else {
            Issue.record("an invalid property was accepted")
            return
        }
        #expect(problem.description.contains("eth1: MEDIAROUTE_ENABLED must be 0 or 1, not \"yes\""))
    }
}

@Suite struct SysfsAdapterReaderTests {
    /// A sysfs tree and a udev database as a box with Wi-Fi, Ethernet and Bluetooth has them.
    func makeTree() throws -> String {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("mediaroute-sysfs-\(UUID().uuidString.prefix(8))").path
        func write(_ path: String, _ text: String) throws {
            let full = root + "/" + path
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try text.write(toFile: full, atomically: true, encoding: .utf8)
        }
        try write("sys/class/net/lo/uevent", "INTERFACE=lo\nIFINDEX=1\n")
        try write("sys/class/net/enp0s3/uevent", "INTERFACE=enp0s3\nIFINDEX=2\n")
        try write("sys/class/net/wlan0/uevent", "DEVTYPE=wlan\nINTERFACE=wlan0\nIFINDEX=3\n")
        try write("sys/class/net/br0/uevent", "DEVTYPE=bridge\nINTERFACE=br0\nIFINDEX=4\n")
        try write("sys/class/bluetooth/hci0/uevent", "DEVTYPE=host\n")
        try write("sys/class/bluetooth/hci0:256/uevent", "DEVTYPE=link\n")
        // udev's database: E: properties, plus records the reader must skip.
        try write("run/udev/data/n2", "I:9654288622\nE:ID_NET_NAME=enp0s3\nE:MEDIAROUTE_TRANSPORT=lan\nE:SYSTEMD_WANTS=mediarouted.service\nG:systemd\nQ:systemd\nV:1\n")
        try write("run/udev/data/n3", "I:9654288700\nE:MEDIAROUTE_TRANSPORT=wifi\nE:MEDIAROUTE_WIFI_SCAN=p2p\nE:MEDIAROUTE_ROLE=primary\nG:systemd\n")
        try write("run/udev/data/+bluetooth:hci0", "I:9654288800\nE:MEDIAROUTE_TRANSPORT=bluetooth\nE:MEDIAROUTE_ENABLED=0\n")
        return root
    }

    @Test func readsUeventsAndTheUdevDatabase() throws {
        let root = try makeTree()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let reader = SysfsAdapterReader(sysfsRoot: root + "/sys", udevDataRoot: root + "/run/udev/data")
        #expect(reader.hasUdevDatabase)
        let records = reader.records()
        #expect(records.map(\.name) == ["br0", "enp0s3", "lo", "wlan0", "hci0", "hci0:256"])
        let wlan = try #require(records.first { $0.name == "wlan0" })
        #expect(wlan.devtype == "wlan")  // from uevent
        #expect(wlan.ifindex == 3)
        #expect(wlan.properties["MEDIAROUTE_WIFI_SCAN"] == "p2p")  // from the database
        #expect(wlan.properties["G:systemd"] == nil)

        let settings = records.compactMap { try? AdapterSettings.resolve($0, configuration: DaemonConfiguration()).get() }
            .filter { $0.transport != .none }
        #expect(settings.map(\.name) == ["enp0s3", "wlan0", "hci0"])
        #expect(settings.first { $0.name == "hci0" }?.enabled == false)
        #expect(settings.first { $0.name == "wlan0" }?.scanMode == .p2p)
        #expect(settings.allSatisfy { $0.source == "udev" })
    }

    @Test func withoutUdevTheKernelsViewIsUsed() throws {
        let root = try makeTree()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let reader = SysfsAdapterReader(sysfsRoot: root + "/sys", udevDataRoot: root + "/run/udev/missing")
        #expect(!reader.hasUdevDatabase)
        let settings = reader.records().compactMap { try? AdapterSettings.resolve($0, configuration: DaemonConfiguration()).get() }
            .filter { $0.transport != .none }
        #expect(settings.map { "\($0.name):\($0.transport.rawValue):\($0.enabled)" } == ["enp0s3:lan:true", "wlan0:wifi:true", "hci0:bluetooth:true"])
        #expect(settings.first { $0.name == "wlan0" }?.scanMode == .passive)
    }

    @Test func hostileNamesAndHugeFilesAreHarmless() throws {
        let root = try makeTree()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let reader = SysfsAdapterReader(sysfsRoot: root + "/sys", udevDataRoot: root + "/run/udev/data")
        #expect(reader.record(subsystem: "net", name: "../../../etc") == nil)
        let big = String(repeating: "E:X=\(String(repeating: "y", count: 100))\n", count: 2000)
        try big.write(toFile: root + "/run/udev/data/n2", atomically: true, encoding: .utf8)
        let record = try #require(reader.record(subsystem: "net", name: "enp0s3"))
        #expect(record.properties["X"]?.count == 100)
    }
}
