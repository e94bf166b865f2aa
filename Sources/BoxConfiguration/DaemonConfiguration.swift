#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Everything `/etc/mediaroute/mediaroute.conf` can say.
///
/// The file is INI-like: `[section]` headers, `key = value` lines, `#` or `;`
/// comments. Sections: `[daemon]` (the daemon's options, which command-line
/// options override) and one per transport, `[lan]`, `[wifi]`, `[bluetooth]`,
/// whose keys are the defaults udev properties override per device.
public struct DaemonConfiguration: Sendable, Hashable {
    public static let defaultPath = "/etc/mediaroute/mediaroute.conf"

    /// `[daemon]` keys, with the command-line option each one matches.
    public var daemon: [String: String] = [:]
    public var lan = TransportSettings(role: .primary)
    public var wifi = TransportSettings(role: .secondary)
    public var bluetooth = TransportSettings(role: .primary)
    /// `[routing] preferred-protocols`: protocols tried first when a device is reached by
    /// several (ids or their last label: `upnp, bluetooth-le`), most preferred first.
    public var preferredProtocols: [String] = []
    /// `[wifi] setup-ssids`: SSID patterns of speakers and TVs in setup mode (`*` any run,
    /// `?` one character: `Sonos_*, TV-????-Setup`); access points that match are listed as
    /// devices that need setup.
    public var wifiSetupSSIDs: [String] = []
    /// `[lan] cast-app-namespaces = ABCD1234: urn:x-cast:com.example.game, …`: the data-channel
    /// namespace of a Cast app launched in application mode (without one: the first of its own
    /// the running app lists, else `urn:x-cast:` and its id).
    public var castApplicationNamespaces: [String: String] = [:]
    /// `[lan] airplay-protocols = Den TV: airplay1, Porch: airplay2-ntp`: the AirPlay protocol a
    /// receiver is played with whatever its `features` say, by its name or hardware address
    /// (RAOPExtension's `AirPlayProtocolChoice` raw values; a test holds the two together).
    public var airPlayProtocols: [String: String] = [:]
    /// The values `airplay-protocols` takes.
    public static let airPlayProtocolNames = ["airplay1", "airplay2", "airplay2-ptp", "airplay2-ntp", "airplay2-buffered"]
    /// `[bluetooth] a2dp-source`: register MediaRoute's A2DP source endpoints with BlueZ
    /// (`yes`, `auto` — the default — or `no`, where PipeWire or bluez-alsa is the box's A2DP source).
    public var bluetoothA2DPSource = true
    /// `[bluetooth] a2dp-source = auto` (the default): MediaRoute steps aside on an adapter where
    /// another A2DP source (PipeWire's bluez5 plugin, bluez-alsa) registered first — BlueZ then
    /// lists the A2DP Source service on the adapter — and takes the role when that source goes.
    /// `yes` registers whatever else is there.
    public var bluetoothA2DPSourceStepsAside = true
    /// `[bluetooth] codecs = ldac, aptx_hd, aptx, aac, sbc`: the codecs the A2DP source offers,
    /// most preferred first (PipeWire's `bluez5.codecs` names); those whose library is missing
    /// on the box are left out at start with a notice. SBC is offered even when left out here:
    /// every speaker takes it, and a source without it is no A2DP source.
    public var bluetoothCodecs = DaemonConfiguration.bluetoothCodecNames
    /// The codec names `[bluetooth] codecs` takes, in the default order (BluetoothAudio's
    /// `A2DPCodec` raw values; a test holds the two together).
    public static let bluetoothCodecNames = ["ldac", "aptx_hd", "aptx", "aac", "sbc"]
    /// Where the PipeWire sink nodes of routes that take samples come from (`[audio] pipewire`).
    public enum PipeWireNodes: String, Sendable, Hashable {
        /// `auto` (the default): the daemon publishes them in a system-wide PipeWire when one
        /// runs (its socket in `pipewire-runtime-dir`, else `/run/pipewire`); a user's session
        /// PipeWire gets them from `mediarouted pipewire-session`, the user unit
        /// `mediaroute-pipewire.service` that starts with it.
        case automatic = "auto"
        /// `yes`: the daemon publishes them in the PipeWire of `pipewire-runtime-dir` (or of its
        /// own environment), whether or not one was seen at start.
        case on = "yes"
        /// `no`: no node from the daemon; the session helper steps aside too.
        case off = "no"
    }
    /// `[audio] pipewire = auto | yes | no`: PipeWire sink nodes for routes that take samples.
    public var pipeWire = PipeWireNodes.automatic
    /// `[video] pipewire = yes | no`: a PipeWire video sink node (`mediaroute.<device>.video`) for
    /// each route that shows real-time video, wherever `[audio] pipewire` puts the audio nodes
    /// (default yes: a node costs a process only while its route is active).
    public var pipeWireVideo = true
    /// `[video] encoders`: libavcodec's H.264 encoders tried before OpenH264, in order (nil: the
    /// default, `h264_v4l2m2m`; empty: OpenH264 only).
    public var videoEncoders: [String]?
    /// `[audio] pipewire-runtime-dir`: the `XDG_RUNTIME_DIR` of the PipeWire to publish in
    /// (default: `/run/pipewire` for `auto`, the daemon's own environment for `yes`).
    public var pipeWireRuntimeDirectory: String?
    /// `[audio] group-offsets = Porch AirPlay: -5, Den TV: 12`: how much later (ms; negative:
    /// earlier) a device plays in a group than its own report says, by its name — for what no
    /// two-way clock exchange can see, a link slower one way than the other.
    public var groupOffsets: [String: Double] = [:]

    /// `[audio] live-formats = Den TV: wav`: the encoding of the live stream a device that
    /// fetches URLs (UPnP, Cast) is sent the box's audio in (`lpcm`, `wav`, `flac`, `mp3` or `aac`), by its name,
    /// whatever it lists.
    public var liveFormats: [String: String] = [:]
    /// `[audio] live-framing = chunked, Den TV: length`: how a live response's length is told
    /// (`close`: no length, ended by the close; `chunked`; `length`: a large Content-Length), by
    /// default and per device name.
    public var liveFraming: String?
    public var liveFramings: [String: String] = [:]
    /// `[audio] live-latency = Den TV: 1500, gmediarender: 100`: the delay (ms) from the box to
    /// the sound of a device that fetches a live stream, by its name or model (calibrated by
    /// the box maker for a renderer that reports no precise position).
    public var liveLatencies: [String: Double] = [:]
    /// `[audio] live-prime = Den TV: 1000, gmediarender: 0`: the audio (ms) a device that fetches
    /// a live stream waits for before it plays, by its name or model: a fetch starts that far
    /// before the sample due now, so it is sent at once (500 ms by default; gmediarender 0); the
    /// device's latency is at least this.
    public var livePrimes: [String: Double] = [:]
    /// The encodings and framings the `live-…` keys take.
    public static let liveFormatNames = ["lpcm", "wav", "flac", "mp3", "aac"]
    public static let liveFramingNames = ["close", "chunked", "length"]

    /// `[http] serve-from = /srv/media, /media`: the directories local files named on the bus
    /// may be served from (nil: the daemon's defaults, `/media`, `/mnt`, `/srv`).
    public var serveFrom: [String]?
    /// One line for each section or key of a protocol this build leaves out (``BuildTraits``):
    /// ignored, not refused, so one file serves boxes built with different protocols.
    public var notices: [String] = []

    /// ``groupOffsets`` as durations.
    public var groupOffsetDurations: [String: Duration] {
        groupOffsets.mapValues { .microseconds(Int64(($0 * 1000).rounded())) }
    }

    public init() {}

    public static let daemonKeys = ["bus", "name", "log-level", "scenario", "push-listen", "mpris", "mpris-name", "lan", "airplay-latency", "household-key", "box-name"]
    static let transportKeys: [String: [String]] = [
        "lan": ["enabled", "role", "cast-app-namespaces", "airplay-protocols"],
        "wifi": ["enabled", "role", "scan-mode", "setup-ssids"],
        "bluetooth": ["enabled", "role", "adapter", "a2dp-source", "codecs"],
    ]

    public func settings(for transport: AdapterTransport) -> TransportSettings? {
        switch transport {
        case .lan: lan
        case .wifi: wifi
        case .bluetooth: bluetooth
        case .none: nil
        }
    }

    /// Reads and checks a configuration file.
    /// - Parameter required: when false, a missing file gives the defaults.
    /// - Throws: the first mistake, naming the file and line.
    public static func load(path: String = defaultPath, required: Bool = false) throws(ConfigurationError) -> DaemonConfiguration {
        if path == "/dev/null" { return DaemonConfiguration() }  // the usual way to say "no configuration"
        guard let data = FileManager.default.contents(atPath: path) else {
            if !required && !FileManager.default.fileExists(atPath: path) { return DaemonConfiguration() }
            throw ConfigurationError(file: path, line: 0, "cannot be read")
        }
        guard data.count <= 1 << 20 else { throw ConfigurationError(file: path, line: 0, "is larger than 1 MiB") }
        guard let text = String(data: data, encoding: .utf8) else { throw ConfigurationError(file: path, line: 0, "is not UTF-8") }
        return try parse(text, file: path)
    }

    /// Parses configuration text; `file` names it in errors. `traits` are the protocols the
    /// build has (``BuildTraits/included``): a left-out one's keys become ``notices``.
    public static func parse(_ text: String, file: String, traits: [String] = BuildTraits.included) throws(ConfigurationError) -> DaemonConfiguration {
        var configuration = DaemonConfiguration()
        var section: String?
        var seen: Set<String> = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            func fail(_ message: String) -> ConfigurationError { ConfigurationError(file: file, line: number, message) }
            let line = rawLine.trimmingSpaces
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else { throw fail("a section header ends with ]") }
                let name = String(line.dropFirst().dropLast()).trimmingSpaces
                guard name == "daemon" || name == "routing" || name == "audio" || name == "video" || name == "http" || transportKeys[name] != nil else {
                    throw fail("unknown section [\(name)] (known: [daemon], [routing], [audio], [video], [http], [lan], [wifi], [bluetooth])")
                }
                section = name
                if let trait = BuildTraits.trait(section: name, key: nil), !traits.contains(trait) {
                    configuration.notices.append("\(file):\(number): [\(name)] is ignored: this build leaves \(trait) out (built without the \(trait) trait)")
                }
                continue
            }
            guard let equals = line.firstIndex(of: "=") else { throw fail("expected key = value") }
            let key = String(line[..<equals]).trimmingSpaces
            var value = String(line[line.index(after: equals)...]).trimmingSpaces
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            guard let section else { throw fail("\(key) is outside a section; put it under [daemon] or a transport") }
            guard !key.isEmpty else { throw fail("a key is missing before =") }
            guard seen.insert(section + "." + key).inserted else { throw fail("\(key) is set twice in [\(section)]") }
            if let trait = BuildTraits.trait(section: section, key: key), !traits.contains(trait) {
                // A left-out section was said once, at its header.
                if BuildTraits.trait(section: section, key: nil) == nil {
                    configuration.notices.append("\(file):\(number): \(key) in [\(section)] is ignored: this build leaves \(trait) out (built without the \(trait) trait)")
                }
                continue
            }
            if section == "daemon" {
                guard daemonKeys.contains(key) else { throw fail("unknown key \(key) in [daemon] (known: \(daemonKeys.joined(separator: ", ")))") }
                guard !value.isEmpty else { throw fail("\(key) needs a value") }
                if key == "mpris", value != "on", value != "off" { throw fail("mpris must be on or off, not \"\(value)\"") }
                if key == "log-level", !["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(value) {
                    throw fail("log-level must be trace, debug, info, notice, warning, error or critical, not \"\(value)\"")
                }
                configuration.daemon[key] = value
                continue
            }
            if section == "audio" {
                switch key {
                case "pipewire":
                    if value.lowercased() == "auto" {
                        configuration.pipeWire = .automatic
                    } else if let flag = Self.flag(value) {
                        configuration.pipeWire = flag ? .on : .off
                    } else {
                        throw fail("pipewire must be auto, yes or no, not \"\(value)\"")
                    }
                case "pipewire-runtime-dir":
                    guard value.hasPrefix("/"), value.utf8.count <= 256 else { throw fail("pipewire-runtime-dir must be an absolute path") }
                    configuration.pipeWireRuntimeDirectory = value
                case "group-offsets":
                    for entry in value.split(separator: ",") {
                        guard let colon = entry.lastIndex(of: ":") else { throw fail("group-offsets takes NAME: MILLISECONDS, …") }
                        let name = String(entry[..<colon]).trimmingSpaces
                        guard !name.isEmpty, let milliseconds = Double(String(entry[entry.index(after: colon)...]).trimmingSpaces),
                            milliseconds.isFinite, abs(milliseconds) <= 1_000
                        else { throw fail("group-offsets: \"\(entry.trimmingSpaces)\" is not NAME: MILLISECONDS (at most ±1000)") }
                        configuration.groupOffsets[name] = milliseconds
                    }
                case "live-formats", "live-framing", "live-latency", "live-prime":
                    for entry in value.split(separator: ",") {
                        let text = entry.trimmingSpaces
                        let colon = text.lastIndex(of: ":")
                        let name = colon.map { String(text[..<$0]).trimmingSpaces }
                        let setting = colon.map { String(text[text.index(after: $0)...]).trimmingSpaces } ?? text
                        switch key {
                        case "live-formats":
                            guard let name, !name.isEmpty, Self.liveFormatNames.contains(setting) else {
                                throw fail("live-formats: \"\(text)\" is not NAME: \(Self.liveFormatNames.joined(separator: "|"))")
                            }
                            configuration.liveFormats[name] = setting
                        case "live-framing":
                            guard Self.liveFramingNames.contains(setting), name.map({ !$0.isEmpty }) ?? true else {
                                throw fail("live-framing: \"\(text)\" is not [NAME:] \(Self.liveFramingNames.joined(separator: "|"))")
                            }
                            if let name { configuration.liveFramings[name] = setting } else { configuration.liveFraming = setting }
                        case "live-prime":
                            guard let name, !name.isEmpty, let milliseconds = Double(setting), milliseconds.isFinite, (0...5_000).contains(milliseconds) else {
                                throw fail("live-prime: \"\(text)\" is not NAME: MILLISECONDS (0 to 5000)")
                            }
                            configuration.livePrimes[name] = milliseconds
                        default:
                            guard let name, !name.isEmpty, let milliseconds = Double(setting), milliseconds.isFinite, (0...10_000).contains(milliseconds) else {
                                throw fail("live-latency: \"\(text)\" is not NAME: MILLISECONDS (0 to 10000)")
                            }
                            configuration.liveLatencies[name] = milliseconds
                        }
                    }
                default:
                    throw fail("unknown key \(key) in [audio] (known: pipewire, pipewire-runtime-dir, group-offsets, live-formats, live-framing, live-latency, live-prime)")
                }
                continue
            }
            if section == "video" {
                if key == "encoders" {
                    let names = value.split(separator: ",").map { String($0).trimmingSpaces }.filter { !$0.isEmpty && $0 != "openh264" }
                    guard names.count <= 8, names.allSatisfy({ $0.utf8.count <= 32 && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") } }) else {
                        throw fail("encoders takes FFmpeg encoder names separated by commas (h264_v4l2m2m), not \"\(value)\"")
                    }
                    configuration.videoEncoders = names
                    continue
                }
                guard key == "pipewire" else { throw fail("unknown key \(key) in [video] (known: pipewire, encoders)") }
                switch value.lowercased() {
                case "yes", "true", "on": configuration.pipeWireVideo = true
                case "no", "false", "off": configuration.pipeWireVideo = false
                default: throw fail("pipewire must be yes or no, not \"\(value)\"")
                }
                continue
            }
            if section == "http" {
                guard key == "serve-from" else { throw fail("unknown key \(key) in [http] (known: serve-from)") }
                let directories = value.split(separator: ",").map { String($0).trimmingSpaces }.filter { !$0.isEmpty }
                guard directories.allSatisfy({ $0.hasPrefix("/") && $0.utf8.count <= 256 }) else {
                    throw fail("serve-from takes absolute directories separated by commas, not \"\(value)\"")
                }
                configuration.serveFrom = directories
                continue
            }
            if section == "routing" {
                guard key == "preferred-protocols" else { throw fail("unknown key \(key) in [routing] (known: preferred-protocols)") }
                let names = value.split(separator: ",").map { String($0).trimmingSpaces }.filter { !$0.isEmpty }
                guard names.allSatisfy({ $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" } }) else {
                    throw fail("preferred-protocols takes protocol ids separated by commas, not \"\(value)\"")
                }
                configuration.preferredProtocols = names
                continue
            }
            guard transportKeys[section]!.contains(key) else {
                throw fail("unknown key \(key) in [\(section)] (known: \(transportKeys[section]!.joined(separator: ", ")))")
            }
            if key == "cast-app-namespaces" {
                for entry in value.split(separator: ",") {
                    guard let colon = entry.firstIndex(of: ":") else { throw fail("cast-app-namespaces takes APPID: urn:x-cast:NAME, …") }
                    let app = String(entry[..<colon]).trimmingSpaces
                    let namespace = String(entry[entry.index(after: colon)...]).trimmingSpaces
                    guard !app.isEmpty, app.utf8.count <= 64, app.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "_-.".contains($0)) }),
                        namespace.hasPrefix("urn:x-cast:"), namespace.utf8.count <= 128, namespace.utf8.count > 11,
                        namespace.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
                    else { throw fail("cast-app-namespaces: \"\(entry.trimmingSpaces)\" is not APPID: urn:x-cast:NAME") }
                    configuration.castApplicationNamespaces[app] = namespace
                }
                continue
            }
            if key == "airplay-protocols" {
                for entry in value.split(separator: ",") {
                    let text = entry.trimmingSpaces
                    guard let colon = text.lastIndex(of: ":") else { throw fail("airplay-protocols takes NAME: \(Self.airPlayProtocolNames.joined(separator: "|")), …") }
                    let name = String(text[..<colon]).trimmingSpaces
                    let choice = String(text[text.index(after: colon)...]).trimmingSpaces.lowercased()
                    guard !name.isEmpty, name.utf8.count <= 128, Self.airPlayProtocolNames.contains(choice) else {
                        throw fail("airplay-protocols: \"\(text)\" is not NAME: \(Self.airPlayProtocolNames.joined(separator: "|"))")
                    }
                    configuration.airPlayProtocols[name] = choice
                }
                continue
            }
            if key == "setup-ssids" {
                configuration.wifiSetupSSIDs = try Self.ssidPatterns(value, fail: fail)
                continue
            }
            if key == "a2dp-source" {
                if value.lowercased() == "auto" {
                    (configuration.bluetoothA2DPSource, configuration.bluetoothA2DPSourceStepsAside) = (true, true)
                    continue
                }
                guard let flag = Self.flag(value) else { throw fail("a2dp-source must be auto, yes or no, not \"\(value)\"") }
                (configuration.bluetoothA2DPSource, configuration.bluetoothA2DPSourceStepsAside) = (flag, false)
                continue
            }
            if key == "codecs" {
                var codecs: [String] = []
                for name in value.split(whereSeparator: { $0 == "," || $0 == " " }).map({ $0.lowercased() }) {
                    guard Self.bluetoothCodecNames.contains(name) else {
                        throw fail("codecs: unknown codec \"\(name)\" (known: \(Self.bluetoothCodecNames.joined(separator: ", ")))")
                    }
                    guard !codecs.contains(name) else { throw fail("codecs: \(name) is named twice") }
                    codecs.append(name)
                }
                guard !codecs.isEmpty else { throw fail("codecs names no codec") }
                if !codecs.contains("sbc") { codecs.append("sbc") }
                configuration.bluetoothCodecs = codecs
                continue
            }
            var settings = configuration.settings(for: AdapterTransport(rawValue: section)!)!
            switch key {
            case "enabled":
                guard let flag = Self.flag(value) else { throw fail("enabled must be yes or no, not \"\(value)\"") }
                settings.enabled = flag
            case "role":
                guard let role = AdapterRole(rawValue: value) else {
                    throw fail("role must be \(AdapterRole.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(value)\"")
                }
                settings.role = role
            case "scan-mode":
                guard let mode = WiFiScanMode(rawValue: value) else {
                    throw fail("scan-mode must be \(WiFiScanMode.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(value)\"")
                }
                settings.scanMode = mode
            default:  // adapter
                guard !value.isEmpty, value.utf8.count <= 64, !value.contains("/") else { throw fail("adapter must be a controller name like hci0") }
                settings.preferredAdapter = value
            }
            switch section {
            case "lan": configuration.lan = settings
            case "wifi": configuration.wifi = settings
            default: configuration.bluetooth = settings
            }
        }
        return configuration
    }

    /// Comma-separated SSID patterns: each 1–32 bytes (an SSID's limit) without control
    /// characters, at most 32 of them.
    static func ssidPatterns(_ value: String, fail: (String) -> ConfigurationError) throws(ConfigurationError) -> [String] {
        let patterns = value.split(separator: ",").map { String($0).trimmingSpaces }.filter { !$0.isEmpty }
        guard !patterns.isEmpty, patterns.count <= 32 else {
            throw fail("setup-ssids takes 1 to 32 SSID patterns separated by commas, not \"\(value)\"")
        }
        for pattern in patterns where pattern.utf8.count > 32 || pattern.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw fail("setup-ssids: \"\(pattern)\" is not an SSID pattern (at most 32 bytes, no control characters)")
        }
        return patterns
    }

    static func flag(_ value: String) -> Bool? {
        switch value.lowercased() {
        case "yes", "true", "on", "1": true
        case "no", "false", "off", "0": false
        default: nil
        }
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { $0 != " " && $0 != "\t" && $0 != "\r" }) else { return "" }
        let last = scalars.lastIndex(where: { $0 != " " && $0 != "\t" && $0 != "\r" })!
        return String(String.UnicodeScalarView(scalars[first...last]))
    }
}
