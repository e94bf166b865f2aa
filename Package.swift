// swift-tools-version:6.1
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

// `MEDIAROUTE_FUZZ=1` adds the libFuzzer binary (built by `make fuzz` with
// `-sanitize=fuzzer,address`); an ordinary build has no use for it.
let fuzzing = Context.environment["MEDIAROUTE_FUZZ"] == "1"

// The simulated TV and speaker (the loopback transport and extension: `--simulate`,
// `--scenario`, `mediaroutectl demo`) are for development and tests. They are a trait
// on by default, so `swift build`, `swift test` and `make demo` have them, and the
// installed binary is built without it (`make release`: --disable-default-traits):
// nothing simulated ships on a box.
let simulated = ["SimulatedDevices"]
let simulatedDevices: [Target.Dependency] = [
    .target(name: "LoopbackExtension", condition: .when(traits: Set(simulated))),
    .target(name: "LoopbackTransport", condition: .when(traits: Set(simulated))),
]

// The protocols a box carries, chosen at build time as Buildroot and Yocto choose every
// package's features (`make release TRAITS=Bluetooth`; Docs/operations.md, "Protocols chosen at
// build time"). All are on by default. A trait left out takes its extension, its libraries and
// its options with it: absent from `--help`, from the catalogue and from `Manager1.Protocols`,
// and a configuration key that names it is refused with one line.
// UPnP/DLNA (the LAN transport, expat) is always in: every other LAN protocol builds on it.
let protocolTraits = ["Cast", "AirPlay", "PipeWire", "WiFi", "Bluetooth"]
func when(_ trait: String, _ targets: String...) -> [Target.Dependency] {
    targets.map { .target(name: $0, condition: .when(traits: [trait])) }
}

let package = Package(
    name: "MediaRoute",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "MediaDevice", targets: ["MediaDevice"]),
        .library(name: "SystemRouting", targets: ["SystemRouting"]),
        .library(name: "RoutingModel", targets: ["RoutingModel"]),
        .library(name: "RouteSystem", targets: ["RouteSystem"]),
        .library(name: "LoopbackExtension", targets: ["LoopbackExtension"]),
        // For extension authors' tests: a routing manager that records, a simulated-device builder.
        .library(name: "MediaRouteTesting", targets: ["MediaRouteTesting"]),
        .executable(name: "mediaroutectl", targets: ["mediaroutectl"]),
        .executable(name: "mediarouted", targets: ["mediarouted"]),
    ],
    traits: [
        .trait(name: "SimulatedDevices", description: "The loopback transport's simulated devices: --simulate, --scenario and the demo."),
        .trait(name: "Cast", description: "Google Cast receivers (the Cast channel: swift-nio-ssl's BoringSSL and swift-protobuf)."),
        .trait(name: "AirPlay", description: "AirPlay receivers (RAOP; FFmpeg's ALAC encoder, opened at run time)."),
        .trait(name: "PipeWire", description: "A PipeWire sink node per route ([audio] pipewire; libpipewire opened at run time)."),
        .trait(name: "WiFi", description: "Wi-Fi Display and setup-mode devices through nl80211 scans."),
        .trait(name: "Bluetooth", description: "Bluetooth speakers through BlueZ (BLE, A2DP with SBC)."),
        .default(enabledTraits: Set(simulated + protocolTraits)),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        // TLS for the Cast channel (BoringSSL inside: Debian's OpenSSL is not what the box ships).
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.30.0"),
        // The Cast channel's CastMessage; its generated code is checked in (scripts/generate-cast-proto.sh).
        // No default traits: BinaryDelimitedStreams imports the whole of Foundation, and with it
        // ICU's data (+46 MB in the static daemon); the channel needs neither it nor FieldMask.
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.30.0", traits: []),
    ],
    targets: [
        // The version and the commit a binary was built from (scripts/build-stamp.sh stamps it).
        .target(name: "CBuildStamp"),
        .target(name: "BuildStamp", dependencies: ["CBuildStamp", "RoutingModel"], swiftSettings: strict),
        // Swift concurrency executors without periodic wake-ups (no libdispatch pool), for the daemon.
        .target(name: "MediaRouteExecutors", swiftSettings: strict),
        // epoll and eventfd for Swift (Glibc's module has neither).
        .systemLibrary(name: "CEpoll"),
        // The one thread that waits on every descriptor outside swift-nio, with timers and a task executor.
        .target(name: "IOReactor", dependencies: ["CEpoll"], swiftSettings: strict),
        // Time, injectable: the real monotonic clock and a manual one for simulations.
        .target(name: "MediaClock", swiftSettings: strict),
        // One observer list for every event stream of the package.
        .target(name: "EventBroadcast", swiftSettings: strict),
        // libdbus-1, the C library: BlueZ and MPRIS need its unix-fd passing and object export.
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
        // A Swift D-Bus layer on libdbus: calls, signals, object export, on the IOReactor's thread.
        .target(
            name: "DBus",
            dependencies: ["CDBus", "IOReactor", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // The one small HTTP/1.1 server (swift-nio): GENA callbacks, served media, the push endpoint.
        .target(
            name: "HTTPServing",
            dependencies: [
                .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strict),
        // LAN sockets on swift-nio: SSDP discovery, bounded HTTP client, mDNS, TLS streams (Cast).
        // The fuzz build (whose harnesses parse SSDP and DNS) leaves TLS out: BoringSSL under
        // ASan would add minutes to every CI run for code no harness reaches.
        .target(
            name: "LANTransport",
            dependencies: [
                "Transport", "IPNetwork", "MediaClock", .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ] + (fuzzing ? [] : [
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["Cast"])),
                .product(name: "NIOTLS", package: "swift-nio", condition: .when(traits: ["Cast"])),
            ]),
            swiftSettings: strict + (fuzzing ? [.define("MEDIAROUTE_NO_TLS")] : [])),
        // Expat, the C library: UPnP documents parsed with no DTD, no entity of their own, nothing
        // fetched. Chosen over libxml2, whose static build drags in ICU's 31 MB data table.
        .systemLibrary(name: "CExpat", pkgConfig: "expat", providers: [.apt(["libexpat1-dev"])]),
        // UPnP documents as values: descriptions, SCPDs, SOAP, DIDL-Lite, LastChange, times.
        .target(name: "UPnP", dependencies: ["CExpat", "IPNetwork"], swiftSettings: strict),
        // The Cast channel (CASTV2) on bytes: framing, CastMessage, the namespaces' JSON, TXT records.
        .target(
            name: "CastChannel", dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")], exclude: ["Proto"],
            swiftSettings: strict),
        // Google Cast receivers (TVs, speakers, groups) as a MediaDeviceExtension: URL playback, apps, volume.
        .target(
            name: "CastExtension",
            dependencies: ["CastChannel", "CLibMD", "HTTPServing", "LiveStreaming", "VideoStreaming", "MediaDevice", "RoutingModel", "Transport", "MediaClock", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // AirPlay 1 (RAOP) on bytes: RTSP requests and responses, the UDP packets, ALAC frames.
        .target(name: "RAOP", dependencies: ["CLibMD", "IPNetwork", "HAP"], swiftSettings: strict),
        // libgcrypt, opened at run time: the primitives of AirPlay 2's pairing (HAP).
        .target(name: "CGcrypt", linkerSettings: [.linkedLibrary("dl")]),
        // HAP pairing as AirPlay 2 receivers run it: TLV8, SRP, pair-setup, pair-verify, the encrypted channel.
        .target(name: "HAP", dependencies: ["CGcrypt", "Transport"], swiftSettings: strict),
        // IEEE 1588 (PTPv2) messages on bytes: what AirPlay 2 receivers are timed with.
        .target(name: "PTP", swiftSettings: strict),
        // libmd's MD5 for RTSP digest authentication.
        .systemLibrary(name: "CLibMD", path: "Sources/CLibMD", pkgConfig: "libmd", providers: [.apt(["libmd-dev"])]),
        // FFmpeg's ALAC encoder, opened with dlopen when a stream starts (headers from libavcodec-dev).
        .systemLibrary(name: "CAVCodec", path: "Sources/CAVCodec"),
        // AirPlay 1 receivers as a MediaDeviceExtension that takes real-time samples.
        .target(
            name: "RAOPExtension",
            dependencies: ["RAOP", "HAP", "CAVCodec", "MediaDevice", "RoutingModel", "Transport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // A route's real-time audio as an HTTP live stream for devices that fetch URLs
        // (UPnP renderers, Cast): encodings, the bounded backlog readers start from, the answers.
        // libsoxr's variable-rate resampler, opened at run time when a live stream corrects a device's clock drift.
        .target(name: "CSoxr", linkerSettings: [.linkedLibrary("dl")]),
        .target(name: "LiveStreaming", dependencies: ["HTTPServing", "MediaClock", "RoutingModel", "CAVCodec", "CSoxr"], swiftSettings: strict),
        // Cisco's OpenH264 encoder, opened at run time when a route first takes video.
        .target(name: "COpenH264", linkerSettings: [.linkedLibrary("dl")]),
        // A route's real-time video as a live HTTP stream: H.264 (OpenH264) in MPEG-TS.
        .target(
            name: "VideoStreaming", dependencies: ["LiveStreaming", "HTTPServing", "MediaClock", "MediaDevice", "RoutingModel", "COpenH264", "CAVCodec"],
            swiftSettings: strict),
        // UPnP/DLNA MediaRenderers (LAN TVs and speakers) as a MediaDeviceExtension.
        .target(
            name: "UPnPRendererExtension",
            dependencies: [
                "UPnP", "LANTransport", "HTTPServing", "LiveStreaming", "VideoStreaming", "IPNetwork", "MediaDevice", "RoutingModel", "Transport", "MediaClock", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // Endpoint, Transport, Connection and its capabilities: the seam every transport implements.
        .target(name: "Transport", swiftSettings: strict),
        // The box's IP network as values (announced HTTP URLs, link and address changes),
        // shared by the LAN transport, UPnP and the rtnetlink monitor.
        .target(name: "IPNetwork", swiftSettings: strict),
        .target(
            name: "LoopbackTransport",
            dependencies: ["Transport", "EventBroadcast", "MediaClock", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // The extension API of the seeds (MediaDeviceExtension & co).
        .target(
            name: "MediaDevice",
            dependencies: ["RoutingModel", "SessionPlayback", "Transport", "MediaClock", "EventBroadcast"],
            swiftSettings: strict),
        // The routing vocabulary shared by extensions, RouteSystem, the app API and the daemon's
        // client, as values and protocols with no I/O: devices as apps see them, keys, routes,
        // events, pairing, playback state, the backend protocol.
        .target(name: "RoutingModel", swiftSettings: strict),
        // One session's playback state and command queue (PlaybackControl), shared by the
        // extension side and the daemon's client; apps see it as RoutingModel's InterfaceControllable.
        .target(name: "SessionPlayback", dependencies: ["RoutingModel", "MediaClock", "EventBroadcast"], swiftSettings: strict),
        // An app's real-time samples into an acquired route descriptor (RealtimeSampleSink):
        // apps that stream link this, not the extension API.
        .target(name: "SampleSink", dependencies: ["RoutingModel", "IOReactor"], swiftSettings: strict),
        // libpipewire-0.3 through dlopen (headers only at build time): the PipeWire sink nodes (audio, video).
        .systemLibrary(name: "CPipeWire", path: "Sources/CPipeWire"),
        .target(
            name: "PipeWireSink",
            dependencies: ["CPipeWire", "DBus", "MediaRouteBusAPI", "RoutingModel", "RawVideo"],
            swiftSettings: strict + [.unsafeFlags(["-Xcc", "-I/usr/include/pipewire-0.3", "-Xcc", "-I/usr/include/spa-0.2"])]),
        // Raw pictures as producers lay them out (strides, packed YUV, 32-bit RGB) to the route's 4:2:0
        // pictures: what the PipeWire video node converts.
        .target(name: "RawVideo", dependencies: ["RoutingModel"], swiftSettings: strict),
        // Real-time video delivery: an app's pictures read on a thread of the route's own and paced
        // to the declared frame rate; YUV4MPEG2 files; an app's H.264 split into access units.
        .target(name: "RealtimeVideo", dependencies: ["MediaDevice", "RoutingModel"], swiftSettings: strict),
        // Real-time audio delivery: a bounded, device-paced reader of an app's PCM descriptor; WAV headers.
        .target(
            name: "RealtimeAudio",
            dependencies: ["IOReactor", "MediaDevice", "RoutingModel", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // What an extension author tests with: RecordingRoutingManager, LoopbackDeviceBuilder.
        .target(
            name: "MediaRouteTesting",
            dependencies: ["MediaDevice", "RoutingModel", "LoopbackTransport", "MediaClock", "DBus", "BlueZTransport", "IOReactor"],
            resources: [.copy("Resources/mediaroute_bluez.py")],
            swiftSettings: strict),
        // The one owner of routing state: hosts extensions.
        .target(
            name: "RouteSystem",
            dependencies: [
                "RoutingModel", "RealtimeAudio", "RealtimeVideo", "IOReactor", "MediaDevice", "EventBroadcast", "MediaClock", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // App-facing API: SystemRouteController, SystemRoute, sessions, picker.
        .target(
            name: "SystemRouting",
            dependencies: ["RoutingModel", "SampleSink", "MediaClock", "EventBroadcast", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        .target(
            name: "LoopbackExtension",
            dependencies: [
                "MediaDevice", "RoutingModel", "LoopbackTransport", "Transport", "MediaClock",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // Now Playing: remote media sessions, remote commands, push tokens and push events.
        .target(name: "NowPlaying", dependencies: ["EventBroadcast", .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        // The push endpoint: HTTP/1.1 on swift-nio, feeding push events to a NowPlayingCenter.
        .target(
            name: "NowPlayingPush",
            dependencies: [
                "NowPlaying", "HTTPServing",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // Publishes the routing system's URL sessions as Now Playing sessions.
        .target(
            name: "NowPlayingRouting",
            dependencies: ["NowPlaying", "RouteSystem", "MediaDevice", "RoutingModel", "MediaClock", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // The MPRIS bridge: the primary Now Playing session as an MPRIS player on D-Bus.
        .target(
            name: "MPRIS",
            dependencies: ["NowPlaying", "DBus", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // The box's configuration: mediaroute.conf, adapter settings from udev properties, a rules checker.
        .target(name: "BoxConfiguration", swiftSettings: strict),
        // libudev, the C library: device enumeration and hot-plug events.
        .systemLibrary(name: "CUdev", pkgConfig: "libudev", providers: [.apt(["libudev-dev"])]),
        // The adapters MediaRoute may use, followed through udev (or sysfs and kernel events without it).
        .target(
            name: "AdapterInventory",
            dependencies: ["CUdev", "IOReactor", "BoxConfiguration", "EventBroadcast", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // libnl (libnl-3 + libnl-genl-3) and the kernel's netlink/nl80211 headers.
        .systemLibrary(name: "CNetlink", pkgConfig: "libnl-genl-3.0", providers: [.apt(["libnl-3-dev", "libnl-genl-3-dev"])]),
        // Wi-Fi: nl80211 scans and their information elements (P2P, Wi-Fi Display), rtnetlink network changes.
        .target(
            name: "WiFiTransport",
            dependencies: ["CNetlink", "IOReactor", "Transport", "IPNetwork", "MediaClock", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // Wi-Fi Display sinks and setup-mode devices as picker entries (activation not yet supported).
        .target(
            name: "WiFiDisplayExtension",
            dependencies: ["WiFiTransport", "MediaDevice", "RoutingModel", "Transport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // BlueZ over D-Bus: object manager, discovery, connect, pairing agent, GATT.
        .target(
            name: "BlueZTransport",
            dependencies: ["DBus", "EventBroadcast", "Transport", "MediaClock", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // libsbc: SBC, the codec every A2DP sink takes.
        .systemLibrary(name: "CSbc", pkgConfig: "sbc", providers: [.apt(["libsbc-dev"])]),
        // Bluetooth audio encoding: SBC, AAC, aptX (HD) and LDAC frames in A2DP media packets of the transport's MTU.
        // aptX / aptX HD (libfreeaptx) and LDAC (libldacbt-enc, -abr), opened with dlopen when a stream needs one.
        .systemLibrary(name: "CBluetoothCodecs", path: "Sources/CBluetoothCodecs"),
        .target(name: "BluetoothAudio", dependencies: ["CSbc", "CAVCodec", "CBluetoothCodecs"], swiftSettings: strict),
        // BLE speakers: Volume Control Service, pairing through the routing system.
        .target(
            name: "BLESpeakerExtension",
            dependencies: ["BlueZTransport", "BluetoothAudio", "MediaClock", "MediaDevice", "RoutingModel", "Transport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // Which extensions exist and how each is configured and loaded: used by the daemon, the CLI and the tests.
        .target(
            name: "ExtensionCatalogue",
            dependencies: [
                "AdapterInventory", "BoxConfiguration", "Coordination", "DBus", "LANTransport", "MediaClock",
                "MediaDevice", "RoutingModel", "RouteSystem", "UPnPRendererExtension", "LiveStreaming", "HTTPServing", "WiFiTransport",
                .product(name: "Logging", package: "swift-log"),
            ] + when("Cast", "CastExtension") + when("AirPlay", "RAOPExtension") + when("WiFi", "WiFiDisplayExtension")
                + when("Bluetooth", "BLESpeakerExtension", "BlueZTransport", "BluetoothAudio"),
            swiftSettings: strict),
        // Coordinated playback: clock sync between participants (more to come, see issue 7).
        .target(name: "Coordination", dependencies: ["IOReactor", "MediaClock", "MediaDevice", "RoutingModel", "Transport", "IPNetwork", "CLibMD", "PTP"], swiftSettings: strict),
        // The CLI's commands, as a library so tests can drive them.
        .target(
            name: "MediaRouteCommands",
            dependencies: ["SampleSink", "BuildStamp",
                "SystemRouting", "RouteSystem", "MediaDevice", "RoutingModel", "ExtensionCatalogue",
                "MediaClock", "DBus", "MediaRouteClient", "Coordination", "LANTransport", "UPnPRendererExtension", "RealtimeAudio", "RealtimeVideo", "IOReactor",
                "WiFiTransport", "BoxConfiguration",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ] + simulatedDevices + when("PipeWire", "PipeWireSink"),
            swiftSettings: strict),
        .executableTarget(
            name: "mediaroutectl",
            dependencies: ["MediaRouteCommands", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict),

        .target(
            name: "MediaRouteTestSupport",
            dependencies: ["MediaRouteTesting", 
                "RouteSystem", "MediaDevice", "RoutingModel", "LoopbackExtension", "LoopbackTransport", "MediaClock", "NowPlaying", "WiFiTransport", "Transport", "CNetlink", "BlueZTransport", "DBus", "IOReactor", "LANTransport",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/MediaRouteTestSupport"),
        // Names and error mapping of mediarouted's D-Bus API, shared by the daemon and its clients.
        .target(name: "MediaRouteBusAPI", dependencies: ["DBus", "RoutingModel"], swiftSettings: strict),
        // SystemRouting backed by mediarouted over D-Bus.
        .target(
            name: "MediaRouteClient",
            dependencies: [
                "DBus", "MediaRouteBusAPI", "SystemRouting", "RoutingModel", "SampleSink", "SessionPlayback", "MediaClock", "EventBroadcast",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // The daemon's D-Bus objects (one file per object) and its lifecycle service.
        .target(
            name: "MediaRouteDaemon",
            dependencies: [
                "DBus", "MediaRouteBusAPI", "RouteSystem", "MediaDevice", "RoutingModel", "ExtensionCatalogue", "IOReactor", "BuildStamp",
                "MediaClock", "NowPlaying", "NowPlayingRouting", "NowPlayingPush", "MPRIS", "BoxConfiguration", "AdapterInventory", "WiFiTransport",
                "LANTransport", "IPNetwork", "UPnPRendererExtension", "SystemRouting", "Coordination", "HTTPServing",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ] + simulatedDevices + when("PipeWire", "PipeWireSink"),
            swiftSettings: strict),
        .executableTarget(
            name: "mediarouted",
            dependencies: [
                "MediaRouteDaemon", "MediaRouteBusAPI", "DBus", "NowPlayingPush", "BoxConfiguration", "LANTransport",
                "MediaRouteExecutors", "MediaRouteCommands", "Coordination", "RoutingModel", "BuildStamp",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ] + simulatedDevices + when("PipeWire", "PipeWireSink"),
            swiftSettings: strict),
        // Benchmarks (release build): `make benchmarks`, figures in Docs/benchmarks.md.
        .executableTarget(
            name: "mediaroute-bench",
            dependencies: ["MediaRouteTesting", 
                "DBus", "MediaRouteTestSupport", "Coordination", "NowPlaying", "NowPlayingPush", "WiFiTransport", "LANTransport", "Transport", "BlueZTransport",
                "UPnPRendererExtension", "LiveStreaming", "MediaDevice", "HTTPServing", "RealtimeAudio", "BluetoothAudio", "IOReactor", "RoutingModel",
                "MediaRouteClient", "SystemRouting", "RAOPExtension", "RouteSystem", "CastExtension", "MediaRouteExecutors", "BLESpeakerExtension", "MediaClock", "PTP", "ExtensionCatalogue",
                "VideoStreaming", "RawVideo",
            ],
            path: "Benchmarks/MediaRouteBench", exclude: []),
        // The libdbus floor next to the BlueZ benchmark: a C client that only receives and walks the signals.
        .executableTarget(name: "dbus-signal-floor", dependencies: ["CDBus"], path: "Benchmarks/DBusSignalFloor"),
        // The kernel's share of one real-time Bluetooth stream, in C: the floor under `mediaroute-bench realtime`.
        .executableTarget(name: "realtime-floor", path: "Benchmarks/RealtimeFloor"),
        .testTarget(
            name: "MediaRouteDaemonTests",
            dependencies: ["MediaRouteTesting", 
                "MediaRouteTestSupport", "MediaRouteClient", "MediaRouteBusAPI", "MediaRouteCommands", "SystemRouting", "DBus",
                "MediaRouteDaemon", "RouteSystem", "LoopbackExtension", "LoopbackTransport", "MediaDevice", "RoutingModel", "MediaClock", "PipeWireSink", "CastChannel",
            ],
            exclude: ["HostilePeer"]),
        .testTarget(name: "RAOPTests", dependencies: ["RAOP", "HAP"]),
        .testTarget(name: "HAPTests", dependencies: ["HAP", "MediaRouteTestSupport", "LANTransport", "RAOP", "Transport"]),
        .testTarget(name: "PTPTests", dependencies: ["PTP"]),
        .testTarget(name: "CastChannelTests", dependencies: ["CastChannel"]),
        .testTarget(
            name: "CastExtensionTests",
            dependencies: [ "LiveStreaming","CastExtension", "CastChannel", "LANTransport", "MediaDevice", "MediaRouteTestSupport", "RouteSystem", "RoutingModel", "Transport", "VideoStreaming"]),
        .testTarget(
            name: "RAOPExtensionTests",
            dependencies: ["RAOPExtension", "LANTransport", "MediaDevice", "MediaRouteTestSupport", "RouteSystem", "RoutingModel", "Coordination", "MediaClock", "Transport", "ExtensionCatalogue", "BoxConfiguration"]),
        .testTarget(name: "CoordinationTests", dependencies: ["Coordination", "IPNetwork", "MediaClock", "MediaDevice", "RoutingModel", "MediaRouteTestSupport", "PTP"]),
        .testTarget(name: "NowPlayingTests", dependencies: ["NowPlaying", "MediaRouteTestSupport"]),
        .testTarget(name: "NowPlayingPushTests", dependencies: ["NowPlayingPush", "NowPlaying", "MediaRouteTestSupport"]),
        .testTarget(
            name: "NowPlayingRoutingTests",
            dependencies: ["NowPlayingRouting", "NowPlaying", "RouteSystem", "MediaDevice", "RoutingModel", "LoopbackExtension", "LoopbackTransport", "MediaClock", "MediaRouteTestSupport"]),
        .testTarget(name: "MPRISTests", dependencies: ["MediaRouteTesting", "MPRIS", "NowPlaying", "DBus", "MediaRouteTestSupport"]),
        // Runs mediarouted (--check-config) and make install-files against this build.
        .testTarget(name: "BoxConfigurationTests", dependencies: ["MediaRouteTesting", "BoxConfiguration", "BuildStamp", "RoutingModel", "MediaRouteTestSupport", "mediarouted", "mediaroutectl"]),
        .testTarget(name: "AdapterInventoryTests", dependencies: ["MediaRouteTesting", "AdapterInventory", "BoxConfiguration", "MediaRouteTestSupport"]),
        .testTarget(
            name: "WiFiTransportTests",
            dependencies: ["MediaRouteTesting", "WiFiTransport", "Transport", "IPNetwork", "LANTransport", "MediaRouteTestSupport", "MediaClock", "CNetlink"]),
        .testTarget(
            name: "WiFiDisplayExtensionTests",
            dependencies: [
                "WiFiDisplayExtension", "WiFiTransport", "LoopbackExtension", "LoopbackTransport", "Transport", "MediaRouteTestSupport", "RouteSystem",
                "MediaDevice", "RoutingModel", "MediaClock",
            ]),
        .testTarget(
            name: "BlueZTransportTests",
            dependencies: ["MediaRouteTesting", "BlueZTransport", "BluetoothAudio", "DBus", "Transport", "MediaClock", "MediaRouteTestSupport"]),
        .testTarget(
            name: "BLESpeakerExtensionTests",
            dependencies: ["MediaRouteTesting", "SampleSink", "BLESpeakerExtension", "BlueZTransport", "BluetoothAudio", "CSbc", "ExtensionCatalogue", "BoxConfiguration", "DBus", "Transport", "MediaClock", "MediaDevice", "RoutingModel", "RouteSystem", "MediaRouteTestSupport", .product(name: "Logging", package: "swift-log")]),
        .testTarget(
            name: "UPnPTests",
            dependencies: ["UPnP", "IPNetwork", "Coordination", "MediaRouteTestSupport"]),
        .testTarget(
            name: "LANTransportTests",
            dependencies: [
                "LANTransport", "IPNetwork", "Transport", "MediaClock", "Coordination", "MediaRouteTestSupport", "UPnPRendererExtension",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "UPnPRendererExtensionTests",
            dependencies: ["MediaRouteTesting", 
                "UPnPRendererExtension", "UPnP", "LANTransport", "HTTPServing", "LiveStreaming", "IPNetwork", "Transport", "MediaDevice", "RoutingModel", "RouteSystem", "MediaClock",
                "MediaRouteTestSupport", "MediaRouteCommands", "WiFiTransport", .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(name: "DBusTests", dependencies: ["MediaRouteTesting", "DBus", "MediaRouteTestSupport"]),
        // The parsers of untrusted bytes as fuzz harnesses (Fuzz/, `make fuzz`, Docs/reliability.md).
        .target(
            name: "MediaRouteFuzzing",
            dependencies: [
                "LANTransport", "IPNetwork", "UPnP", "UPnPRendererExtension", "Transport", "DBus", "BlueZTransport", "BluetoothAudio", "MediaRouteBusAPI", "WiFiTransport",
                "CNetlink", "NowPlaying", "BoxConfiguration", "LoopbackTransport", "RealtimeAudio", "RealtimeVideo", "RawVideo", "RAOP", "CastChannel", "HTTPServing", "LiveStreaming", "RoutingModel", "Coordination", "HAP", "PTP",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: strict),
        // Every checked-in seed and earlier finding, through every harness, in the ordinary suite.
        .testTarget(name: "MediaRouteFuzzingTests", dependencies: ["MediaRouteFuzzing", "Coordination"]),
        .testTarget(name: "MediaClockTests", dependencies: ["MediaClock"]),
        .testTarget(name: "EventBroadcastTests", dependencies: ["EventBroadcast"]),
        .testTarget(name: "ArchitectureTests", dependencies: ["MediaRouteTesting", "MediaRouteTestSupport"]),
        .testTarget(
            name: "ExtensionCatalogueTests",
            dependencies: ["ExtensionCatalogue", "BoxConfiguration", "RouteSystem", "LiveStreaming", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "MediaRouteBusAPITests", dependencies: ["MediaRouteBusAPI", "DBus", "RoutingModel"]),
        .testTarget(name: "RoutingModelTests", dependencies: ["RoutingModel"]),
        .testTarget(name: "BluetoothAudioTests", dependencies: ["BluetoothAudio", "MediaRouteTestSupport"]),
        .testTarget(name: "MediaRouteExecutorsTests", dependencies: ["MediaRouteExecutors"]),
        .testTarget(name: "IOReactorTests", dependencies: ["IOReactor"]),
        .testTarget(name: "RealtimeAudioTests", dependencies: ["RealtimeAudio", "IOReactor", "MediaDevice", "RoutingModel", "MediaRouteTestSupport", "MediaRouteTesting"]),
        .testTarget(
            name: "MediaRouteTestingTests",
            dependencies: ["MediaRouteTesting", "LoopbackExtension", "LoopbackTransport", "MediaClock", "MediaDevice", "RoutingModel"]),
        .testTarget(name: "TransportTests", dependencies: ["Transport"]),
        .testTarget(name: "IPNetworkTests", dependencies: ["IPNetwork"]),
        .testTarget(name: "HTTPServingTests", dependencies: ["HTTPServing", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "LiveStreamingTests", dependencies: ["LiveStreaming", "HTTPServing", "RoutingModel", "MediaRouteTestSupport"]),
        .testTarget(name: "VideoStreamingTests", dependencies: ["VideoStreaming", "LiveStreaming", "HTTPServing", "RoutingModel", "MediaRouteTestSupport"]),
        .testTarget(name: "RawVideoTests", dependencies: ["RawVideo", "RoutingModel"]),
        .testTarget(name: "RealtimeVideoTests", dependencies: ["RealtimeVideo", "MediaDevice", "RoutingModel", "MediaRouteTestSupport"]),
        .testTarget(name: "LoopbackTransportTests", dependencies: ["MediaRouteTestSupport", "LoopbackTransport", "Transport", "MediaClock"]),
        .testTarget(name: "MediaDeviceTests", dependencies: ["MediaDevice", "RoutingModel", "MediaClock", "Transport"]),
        .testTarget(
            name: "RouteSystemTests",
            dependencies: ["SampleSink", "MediaRouteTestSupport", "RouteSystem", "MediaDevice", "RoutingModel", "LoopbackExtension", "LoopbackTransport", "MediaClock", "Transport"]),
        .testTarget(
            name: "SystemRoutingTests",
            dependencies: ["MediaRouteTestSupport", "SystemRouting", "RouteSystem", "MediaDevice", "RoutingModel", "LoopbackExtension", "LoopbackTransport", "MediaClock"]),
        .testTarget(
            name: "LoopbackExtensionTests",
            dependencies: ["MediaRouteTestSupport", "LoopbackExtension", "LoopbackTransport", "MediaDevice", "RoutingModel", "RouteSystem", "MediaClock", "Transport"]),
        .testTarget(
            name: "MediaRouteCommandsTests",
            dependencies: ["MediaRouteTestSupport", "MediaRouteCommands", "LoopbackTransport"]),
    ]
)

if fuzzing {
    package.targets.append(
        .executableTarget(
            name: "mediaroute-fuzz",
            dependencies: ["MediaRouteFuzzing"],
            path: "Fuzz/Sources/mediaroute-fuzz",
            // libFuzzer brings `main`: no top-level code here.
            swiftSettings: strict + [.unsafeFlags(["-parse-as-library"])]))
}
