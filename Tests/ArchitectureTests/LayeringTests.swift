import Foundation
import MediaRouteTestSupport
import Testing
import MediaRouteTesting

/// The targets' declared dependencies, read from the manifest (`swift package dump-package`),
/// held to the layers of ../shared/DESIGN.md: a target depends only on targets of lower rank.
/// (With `--explicit-target-dependency-import-check error` in the build, an import of an
/// undeclared target already fails; this test makes a declared upward one fail too.)
@Suite(.timeLimit(.minutes(1))) struct LayeringTests {
    /// Each target's rank, bottom up, row by row as DESIGN.md draws them; within a row a
    /// tenth orders the targets that build on a neighbour (LANTransport on Transport).
    static let ranks: [String: Double] = [
        // C shims
        "CDBus": 0, "CExpat": 0, "CNetlink": 0, "CSbc": 0, "CUdev": 0, "CPipeWire": 0, "CAVCodec": 0, "CBluetoothCodecs": 0, "CEpoll": 0, "CLibMD": 0, "CBuildStamp": 0, "CGcrypt": 0, "CSoxr": 0, "COpenH264": 0,
        // vocabulary
        "RoutingModel": 1,
        // runtime (and the box's configuration values)
        "BuildStamp": 1.1,
        "MediaClock": 2, "EventBroadcast": 2, "MediaRouteExecutors": 2, "BoxConfiguration": 2, "IOReactor": 2.1,
        // what apps use beside the vocabulary: a session's playback state, the real-time sample sink
        "SampleSink": 2.2, "SessionPlayback": 2.2,
        // raw pictures as producers lay them out, to the route's (the PipeWire video node's conversion)
        "RawVideo": 2.2,
        // system libraries
        "DBus": 3,
        // transports
        "Transport": 4, "IPNetwork": 4, "HTTPServing": 4.1, "LoopbackTransport": 4.1, "LANTransport": 4.1, "BlueZTransport": 4.1,
        "WiFiTransport": 4.1, "AdapterInventory": 4.1,
        // protocols
        "UPnP": 5, "RAOP": 5.1, "HAP": 5, "PTP": 5, "CastChannel": 5, "BluetoothAudio": 5, "LiveStreaming": 5,
        // the extension API
        "MediaDevice": 6,
        // what extensions stream with that speaks the extension API (a video stream is a RealtimeVideoReceiver)
        "VideoStreaming": 6.1,
        // extensions
        "LoopbackExtension": 7, "UPnPRendererExtension": 7, "BLESpeakerExtension": 7, "RAOPExtension": 7, "CastExtension": 7,
        "WiFiDisplayExtension": 7,
        // media
        "RealtimeAudio": 8, "RealtimeVideo": 8,
        // routing
        "RouteSystem": 9,
        // features
        "SystemRouting": 10, "NowPlaying": 10, "Coordination": 10, "ExtensionCatalogue": 10.1,
        "NowPlayingRouting": 10.1, "MPRIS": 10.1, "NowPlayingPush": 10.1,
        // bus
        "MediaRouteBusAPI": 11, "MediaRouteClient": 11.1, "PipeWireSink": 11.1, "MediaRouteDaemon": 11.2,
        // executables
        "MediaRouteCommands": 12, "mediarouted": 12.1, "mediaroutectl": 12.1,
    ]

    /// Above every layer: what tests, fuzzes and measures the rest.
    static let tooling: Set<String> = ["MediaRouteTesting", "MediaRouteTestSupport", "MediaRouteFuzzing", "mediaroute-bench", "dbus-signal-floor", "realtime-floor"]

    /// Edges that break the layers, each recorded until it is removed. The test fails when one
    /// of them goes (take it off this list) as much as when a new one comes. None today.
    static let knownViolations: Set<String> = []

    /// Target → the package's targets it depends on (products of other packages left out).
    static func declaredDependencies() async throws -> [String: [String]] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        // A scratch path of its own: `swift test` holds the package's .build while it runs.
        let scratch = NSTemporaryDirectory() + "mr-dump-package"
        let (status, output) = try await ChildProcess.runOffPool(
            ["/usr/bin/env", "swift", "package", "--package-path", root, "--scratch-path", scratch, "dump-package"])
        try #require(status == 0, "swift package dump-package: \(output.prefix(500))")
        let json = try #require(output.firstIndex(of: "{").map { String(output[$0...]) })
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let targets = try #require(manifest["targets"] as? [[String: Any]])
        var graph: [String: [String]] = [:]
        for target in targets where target["type"] as? String != "test" && target["type"] as? String != "plugin" {
            guard let name = target["name"] as? String else { continue }
            let dependencies = (target["dependencies"] as? [[String: Any]] ?? []).compactMap { dependency -> String? in
                ((dependency["byName"] ?? dependency["target"]) as? [Any])?.first as? String
            }
            graph[name] = dependencies
        }
        return graph
    }

    @Test func everyTargetDependsOnlyOnLowerLayers() async throws {
        let graph = try await Self.declaredDependencies()
        #expect(graph.count > 40, "the manifest's targets were read")
        let unplaced = graph.keys.filter { Self.ranks[$0] == nil && !Self.tooling.contains($0) }.sorted()
        #expect(unplaced.isEmpty, "place each new target in a layer (DESIGN.md, and this test's ranks): \(unplaced)")
        var violations: Set<String> = []
        for (target, dependencies) in graph {
            guard let rank = Self.ranks[target] else { continue }
            for dependency in dependencies {
                guard let below = Self.ranks[dependency] else {
                    if Self.tooling.contains(dependency) { violations.insert("\(target) -> \(dependency)") }
                    continue
                }
                if below >= rank { violations.insert("\(target) -> \(dependency)") }
            }
        }
        // The bus API depends on the vocabulary (and D-Bus) only.
        for dependency in graph["MediaRouteBusAPI"] ?? [] where !["RoutingModel", "DBus"].contains(dependency) {
            violations.insert("MediaRouteBusAPI -> \(dependency)")
        }
        #expect(violations.subtracting(Self.knownViolations).sorted() == [], "dependencies against the layers")
        #expect(Self.knownViolations.subtracting(violations).sorted() == [], "fixed: take these off knownViolations")
    }

    /// The PipeWire sink process links neither the app API nor the box's configuration.
    @Test func thePipeWireSinkLinksNeitherTheAppAPINorTheConfiguration() async throws {
        let graph = try await Self.declaredDependencies()
        var closure: Set<String> = []
        var queue = graph["PipeWireSink"] ?? []
        while let next = queue.popLast() {
            guard closure.insert(next).inserted else { continue }
            queue += graph[next] ?? []
        }
        #expect(!closure.isEmpty)
        #expect(!closure.contains("SystemRouting") && !closure.contains("BoxConfiguration"), "\(closure.sorted())")
        #expect(!closure.contains("MediaDevice") && !closure.contains("Transport"), "no extension API, no transports: \(closure.sorted())")
    }
}
