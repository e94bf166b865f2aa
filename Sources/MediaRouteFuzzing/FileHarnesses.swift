import BoxConfiguration
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LoopbackTransport
import NowPlaying
import RealtimeAudio

/// Bytes that reach the daemon other than from radios: push payloads from any local
/// process, the box's configuration, udev properties, scenario files.
enum FileHarnesses {
    static let all: [FuzzHarness] = [push, configuration, udev, scenario, loopbackWire, wavHeader]

    /// The start of a WAV file or of standard input, as `mediaroutectl stream` reads it.
    static let wavHeader = FuzzHarness("wav-header", "RIFF/WAVE headers: chunks, fmt (PCM, float, extensible), data", maximumLength: 80 * 1024) { bytes in
        guard let header = try? WAVHeader.parse(bytes) else { return nil }
        if header.dataOffset > bytes.count { return "samples start at \(header.dataOffset), past the \(bytes.count) bytes read" }
        if header.dataOffset > WAVHeader.maximumHeaderBytes + 8 { return "samples start at \(header.dataOffset), past the header limit" }
        guard let frame = header.format.bytesPerFrame, frame > 0 else { return "accepted \(header.format), which has no frame size" }
        if let length = header.dataLength, length < 0 { return "negative data length \(length)" }
        return nil
    }

    /// Attributes with every kind of field a Now Playing extension declares.
    struct Attributes: Decodable {
        var id: String
        var title: String?
        var duration: Double?
        var started: Date?
        var rate: Float?
        var queue: [String]?
    }

    static let push = FuzzHarness("push-json", "push event payloads ({\"aps\": …}) as the push endpoint receives them") { bytes in
        _ = try? PushPayload.decode(PushSessionID.self, from: bytes)
        guard let aps = try? PushPayload.decode(Attributes.self, from: bytes) else { return nil }
        if !aps.timestamp.isFinite || aps.timestamp < 0 { return "accepted timestamp \(aps.timestamp)" }
        return nil
    }

    static let configuration = FuzzHarness("config", "mediaroute.conf") { bytes in
        guard let configuration = try? DaemonConfiguration.parse(String(decoding: bytes, as: UTF8.self), file: "fuzz.conf") else { return nil }
        // Every adapter resolves against whatever the file said, with whatever udev said.
        let record = AdapterRecord(subsystem: "net", name: "wlan0", devtype: "wlan", ifindex: 3, properties: ["MEDIAROUTE_TRANSPORT": "wifi"])
        _ = AdapterSettings.resolve(record, configuration: configuration)
        return nil
    }

    /// A uevent file and a udev database entry (the same bytes read both ways), then the
    /// properties they set resolved into adapter settings; the text also checked as rules.
    static let udev = FuzzHarness("udev", "udev properties (uevent, /run/udev/data) and rules files") { bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        let properties = SysfsAdapterReader.parseUevent(text).merging(SysfsAdapterReader.parseDatabase(text)) { $1 }
        for (key, value) in properties where UdevProperty.all.contains(key) { _ = UdevProperty.validate(key, value) }
        let record = AdapterRecord(subsystem: "net", name: properties["INTERFACE"] ?? "eth0", devtype: properties["DEVTYPE"] ?? "", properties: properties)
        _ = AdapterSettings.resolve(record, configuration: DaemonConfiguration())
        _ = UdevRulesChecker.check(text, file: "99-fuzz.rules")
        return nil
    }

    static let scenario = FuzzHarness("loopback-scenario", "loopback scenario files (--scenario)") { bytes in
        _ = try? LoopbackScenario.decode(Data(bytes), source: "fuzz")
        return nil
    }

    static let loopbackWire = FuzzHarness("loopback-wire", "loopback transport messages between sender and simulated device") { bytes in
        _ = LoopbackEnvelope<LoopbackPlaybackStatus>.decode(bytes)
        _ = LoopbackEnvelope<LoopbackRequest>.decode(bytes)
        return nil
    }
}
