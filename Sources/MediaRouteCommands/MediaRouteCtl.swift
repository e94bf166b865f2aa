public import ArgumentParser
import LANTransport
import BuildStamp
import DBus
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
import Logging
#if SimulatedDevices
import LoopbackTransport
#endif
import MediaClock
import MediaDevice
import RoutingModel
import SystemRouting
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `mediaroutectl`: find, pick and play on TVs and speakers.
@available(macOS 15, *)
public struct MediaRouteCtl: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "mediaroutectl",
        abstract: "Find TVs and speakers, pair, play and control them.",
        version: "mediaroutectl \(MediaRouteBuild.description)",
        subcommands: [Devices.self, Pick.self, Play.self, Stream.self, Mirror.self, Pause.self, Resume.self, Seek.self, Volume.self, Mute.self, Stop.self, Status.self, Suggest.self, Group.self, Boxes.self, Trust.self] + developmentCommands)

    public init() {}
}

#if SimulatedDevices
/// Commands of a development build: the demo, on the simulated devices.
let developmentCommands: [any ParsableCommand.Type] = [MediaRouteCtl.Demo.self]
#else
let developmentCommands: [any ParsableCommand.Type] = []
#endif



func percent(_ level: Float) -> String { "\(Int((level * 100).rounded()))%" }

func seconds(_ value: Double) -> String {
    let total = Int(value.rounded(.down))
    let fraction = Int(((value - Double(total)) * 10).rounded(.down))
    return "\(total / 60):\(String(repeating: "0", count: total % 60 < 10 ? 1 : 0))\(total % 60).\(fraction)"
}

/// Discovers, then activates the device named `name`, pairing with `pin` or a prompt.
func activate(
    _ name: String, pin: String?, discoverySeconds: Double, environment: RoutingEnvironment, console: any Console
) async throws -> SystemRoute {
    await environment.controller.setPairingAgent(ConsolePairingAgent(console: console, pin: pin))
    let entries = await environment.discover(seconds: discoverySeconds, until: { $0.named(name) != nil })
    guard let entry = entries.named(name) else {
        let known = entries.map(\.displayName).joined(separator: ", ")
        throw CommandFailure("no device named \"\(name)\" found (found: \(known.isEmpty ? "none" : known))")
    }
    // With a daemon the device may already be active (a route kept from an earlier command).
    if let existing = environment.controller.routes.named(entry.displayName) {
        return existing
    }
    do {
        return try await environment.controller.activate(deviceNamed: entry.id)
    } catch let error as MediaDeviceError {
        throw CommandFailure("cannot activate \(entry.displayName): \(error)")
    }
}

extension MediaRouteCtl {
    /// Lists the devices found in a few seconds.
    public struct Devices: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "List the devices found in a few seconds.")

        @OptionGroup public var common: CommonOptions
        // Three seconds: SSDP and mDNS ask a second time after 1 s, so a device whose first
        // query or answer was lost (multicast is lossy on Wi-Fi) has 2 s to answer the second,
        // and a BLE speaker that advertises about once a second is seen more than once.
        @Option(help: "How long to discover, in seconds.") public var seconds: Double = 3
        @Flag(help: "Print JSON.") public var json = false

        public init() {}

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            guard seconds > 0, seconds <= 300 else { throw CommandFailure("--seconds must be between 0 and 300") }
            let environment = try await common.environment(console: console)
            let showProgress = !json && seconds >= 2
            let entries = await environment.discover(seconds: seconds) { count in
                if showProgress { console.write("  … \(count) device(s) so far") }
            }
            if json {
                struct Row: Encodable {
                    let id, name, type: String
                    let protocols: [String]
                    let state: String
                    let available: Bool
                    let unavailableReason: String?
                }
                let rows = entries.map {
                    Row(id: $0.id, name: $0.displayName, type: $0.deviceType.rawValue,
                        protocols: $0.protocolDisplayNames, state: $0.state.rawValue,
                        available: $0.isAvailable, unavailableReason: $0.unavailableReason)
                }
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                console.write(String(decoding: try encoder.encode(rows), as: UTF8.self))
            } else if entries.isEmpty {
                console.write("No devices found.")
            } else {
                for (index, entry) in entries.enumerated() {
                    let unavailable = entry.unavailableReason.map { "  (unavailable: \($0))" } ?? ""
                    console.write("\(index + 1). \(entry.displayName)  [\(entry.deviceType.rawValue), \(entry.protocolDisplayNames.joined(separator: " + "))]\(unavailable)")
                }
            }
            await environment.shutdown()
        }
    }

    /// Plays a URL on a device.
    public struct Play: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(
            abstract: "Play a URL or a local file on a device.",
            discussion: """
                Through mediarouted it returns once the device reports playing and the route stays \
                (`--follow` shows the position until the media ends). In this process it stays in the \
                foreground, showing the position, until the media ends, Ctrl-C, or --seconds; a local \
                file is served to the device meanwhile.
                """)

        @OptionGroup public var common: CommonOptions
        @Argument(help: "The media URL, or a local file (served to the device while it plays).") public var url: String
        @Option(help: "The device's name.") public var to: String
        @Option(help: "The pairing code, if the device asks for one.") public var pin: String?
        @Flag(help: "Show position and duration on one updating line until the media ends.") public var follow = false
        @Option(help: "Stop after this many seconds (default: never; the media's end or Ctrl-C ends it in this process).")
        public var seconds: Double?
        @Flag(help: "Through mediarouted with --seconds: leave it playing after them (without --seconds it always stays).") public var keep = false

        public init() {}

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            let mediaURL: URL
            if let parsed = URL(string: url), parsed.scheme != nil {
                mediaURL = parsed
            } else if FileManager.default.fileExists(atPath: url) {
                let absolute = url.hasPrefix("/") ? url : FileManager.default.currentDirectoryPath + "/" + url
                mediaURL = URL(fileURLWithPath: absolute)
            } else {
                throw CommandFailure("\"\(url)\" is neither a URL nor a file")
            }
            if let seconds, !(seconds > 0) { throw CommandFailure("--seconds must be more than 0") }
            let environment = try await common.environment(console: console)
            let route = try await activate(to, pin: pin, discoverySeconds: 5, environment: environment, console: console)
            let session = SystemRouteSession(url: mediaURL, mode: .player)
            guard route.addSession(session) else { throw CommandFailure("\(route.routeDisplayName) is busy") }
            let media: SystemRouteMediaSession
            do {
                media = try await session.start()
            } catch {
                await environment.shutdown()
                throw CommandFailure("cannot play on \(route.routeDisplayName): \(error)")
            }
            console.write("Playing \(mediaURL.absoluteString) on \(route.routeDisplayName)")
            await rememberChoice(of: route, for: mediaURL, environment: environment)
            let control = media.playbackControl
            let leaveOnDaemon = environment.usesDaemon && (seconds == nil || keep)
            if leaveOnDaemon && !follow && seconds == nil {
                // Like `catt cast`: return once the device reports playing; the daemon keeps the route.
                let state = await waitForPlaybackStart(control, within: .seconds(15))
                console.write("\(route.routeDisplayName): \(state.rawValue); `mediaroutectl stop --to \"\(route.routeDisplayName)\"` ends it.")
                await environment.shutdown()
                return
            }
            let ended = await showPlayback(control, for: seconds, console: console)
            if leaveOnDaemon {
                console.write(ended ? "Ended." : "Left playing on \(route.routeDisplayName).")
            } else {
                await endRoute(route, environment: environment)
                console.write(ended ? "Ended." : "Stopped.")
            }
            await environment.shutdown()
        }
    }

    /// Prints the route this box suggests for some content.
    public struct Suggest: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(
            abstract: "Print the route suggested for what is about to play, from what this box learned.",
            discussion: "Through mediarouted its history is the daemon's; in this process, the one in $XDG_STATE_HOME/mediaroute.")
        @OptionGroup public var common: CommonOptions
        @Flag(help: "The content is video.") public var video = false
        @Flag(name: .customLong("long-form"), help: "The content is long-form (a film, an episode, an album).") public var longForm = false
        @Option(help: "The application asking (default: mediaroutectl's own id).") public var app: String = "org.mediaroute.ctl"
        @Option(help: "How long to discover, in seconds, in this process.") public var seconds: Double = 2
        @Flag(help: "Print JSON.") public var json = false
        public init() {}
        public func run() async throws { try await run(console: StandardConsole()) }
        public func run(console: any Console) async throws {
            let content = PlaybackContent(isVideo: video, isLongForm: longForm)
            let environment = try await common.environment(console: console)
            let suggestion: RouteSuggestion
            if let daemon = environment.daemon {
                do {
                    suggestion = try await daemon.suggest(application: app, content: content)
                } catch {
                    await environment.shutdown()
                    throw CommandFailure("\(error)")
                }
            } else {
                _ = await environment.discover(seconds: seconds)
                let available = await environment.controller.availableDevices()
                suggestion = await RouteSuggestionStore(path: userSuggestionsPath()).suggestion(
                    for: content, application: app, hour: currentLocalHour(), available: available)
            }
            await environment.shutdown()
            switch (suggestion, json) {
            case (.local, true): console.write(#"{"suggestion": "local"}"#)
            case (.local, false): console.write("Suggested: play locally")
            case (.external(_, let name), true):
                let encoded = String(decoding: try JSONEncoder().encode(name), as: UTF8.self)
                console.write(#"{"suggestion": "external", "device": \#(encoded)}"#)
            case (.external(_, let name), false): console.write("Suggested: \(name)")
            }
        }
    }

    /// Pauses what plays on a device (a route mediarouted holds).
    public struct Pause: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "Pause playback on a device.")
        @OptionGroup public var common: CommonOptions
        @Option(help: "The device's name.") public var to: String
        public init() {}
        public func run() async throws { try await run(console: StandardConsole()) }
        public func run(console: any Console) async throws {
            try await commandPlayback(.pause, common: common, device: to, console: console)
        }
    }

    /// Resumes playback on a device.
    public struct Resume: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "Resume playback on a device.")
        @OptionGroup public var common: CommonOptions
        @Option(help: "The device's name.") public var to: String
        public init() {}
        public func run() async throws { try await run(console: StandardConsole()) }
        public func run(console: any Console) async throws {
            try await commandPlayback(.play, common: common, device: to, console: console)
        }
    }

    /// Seeks playback on a device.
    public struct Seek: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "Seek to a position, in seconds, on a device.")
        @OptionGroup public var common: CommonOptions
        @Argument(help: "The position in seconds.") public var position: Double
        @Option(help: "The device's name.") public var to: String
        public init() {}
        public func validate() throws {
            guard position.isFinite, position >= 0 else { throw ValidationError("SECONDS must be 0 or more") }
        }
        public func run() async throws { try await run(console: StandardConsole()) }
        public func run(console: any Console) async throws {
            try await commandPlayback(.seek(to: position), common: common, device: to, console: console)
        }
    }

    /// Sets or steps a device's volume.
    public struct Volume: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(
            abstract: "Set a device's volume (0-100), or step it with --up/--down.")

        @OptionGroup public var common: CommonOptions
        @Argument(help: "Volume in percent (0-100).") public var level: Int?
        @Option(help: "The device's name.") public var to: String
        @Option(help: "Steps up.") public var up: Int?
        @Option(help: "Steps down.") public var down: Int?
        @Option(help: "The pairing code, if the device asks for one.") public var pin: String?

        public init() {}

        public func validate() throws {
            let given = [level != nil, up != nil, down != nil].filter { $0 }.count
            guard given == 1 else { throw ValidationError("give exactly one of LEVEL, --up, --down") }
            if let level, !(0...100).contains(level) { throw ValidationError("LEVEL must be 0-100") }
        }

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            let steps = (up ?? 0) - (down ?? 0)
            try await changeVolume(common: common, device: to, pin: pin, console: console) { route in
                if let level { try await route.setVolume(Float(level) / 100) } else { try await route.changeVolume(by: steps) }
            } report: { route, confirmed in
                guard let confirmed else { return "\(route.routeDisplayName): the device did not confirm the volume" }
                return "\(route.routeDisplayName): volume \(percent(confirmed.volume))\(confirmed.muted ? " (muted)" : "")"
            }
        }
    }

    /// Mutes or unmutes a device.
    public struct Mute: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "Mute (or with --off, unmute) a device.")

        @OptionGroup public var common: CommonOptions
        @Option(help: "The device's name.") public var to: String
        @Flag(help: "Unmute instead.") public var off = false
        @Option(help: "The pairing code, if the device asks for one.") public var pin: String?

        public init() {}

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            let mute = !off
            try await changeVolume(common: common, device: to, pin: pin, console: console) { route in
                try await route.setMuted(mute)
            } report: { route, confirmed in
                guard let confirmed else { return "\(route.routeDisplayName): the device did not confirm" }
                return "\(route.routeDisplayName): \(confirmed.muted ? "muted" : "unmuted")"
            }
        }
    }

    /// Stops whatever this system plays on a device and deactivates it.
    public struct Stop: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(
            abstract: "Stop playback on a device and deactivate it.",
            discussion: "Without a daemon, mediaroutectl hosts the routing system itself, so only what this process started can be stopped.")

        @OptionGroup public var common: CommonOptions
        @Option(help: "The device's name.") public var to: String
        @Option(help: "The pairing code, if the device asks for one.") public var pin: String?

        public init() {}

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            let environment = try await common.environment(console: console)
            let route = try await activate(to, pin: pin, discoverySeconds: 5, environment: environment, console: console)
            await endRoute(route, environment: environment)
            console.write("\(route.routeDisplayName): stopped and deactivated")
            await environment.shutdown()
        }
    }

    /// Shows devices with their state and the active routes.
    /// The household's other MediaRoute boxes, as the daemon finds them over mDNS.
    public struct Boxes: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(
            abstract: "List the household's other MediaRoute boxes (found by mediarouted over mDNS).",
            discussion: "The daemon publishes its box and finds the others when it has a household key (mediarouted --household-key FILE).")

        @OptionGroup public var common: CommonOptions
        @Option(help: "How long to look, in seconds.") public var seconds: Double = 3

        public init() {}

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            var options = common
            if options.bus == nil { options.bus = "system" }
            let environment = try await options.environment(console: console)
            guard let daemon = environment.daemon else { throw CommandFailure("boxes are found by mediarouted; none answers on the bus") }
            // The daemon looks for boxes while discovery runs: read them before it stops.
            let picker = environment.controller.makePicker(prioritizesVideoDevices: false)
            await picker.open()
            try? await Task.sleep(for: .seconds(seconds))
            let boxes = try await daemon.boxes()
            await picker.close()
            if boxes.isEmpty { console.write("No other box found.") }
            for box in boxes {
                let clock = box.clockOffset.map { offset in
                    "clock \(milliseconds(offset)) ms ± \(milliseconds(box.clockError ?? 0).dropFirst()) ms"
                } ?? "no clock samples (another household's key?)"
                console.write("\(box.name)  \(box.host):\(box.port)  \(clock)")
            }
            await environment.shutdown()
        }
    }

    public struct Status: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(abstract: "Show devices, their state and active routes.")

        @OptionGroup public var common: CommonOptions
        @Option(help: "How long to discover, in seconds.") public var seconds: Double = 0.5
        @Flag(help: "Print JSON: devices, and routes with their real-time audio statistics.") public var json = false

        public init() {}

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            let environment = try await common.environment(console: console)
            let entries = await environment.discover(seconds: seconds)
            let routes = environment.controller.routes
            if json {
                struct Device: Encodable {
                    let name, state: String
                    let protocols: [String]
                }
                struct Report: Encodable {
                    let daemon: Bool
                    let devices: [Device]
                    /// One ``RouteStatus`` per route, the schema `Session1` and the in-process API share.
                    let routes: [RouteStatus]
                }
                var rows: [RouteStatus] = []
                for route in routes {
                    if let status = await route.status() { rows.append(status) }
                }
                let report = Report(
                    daemon: environment.usesDaemon,
                    devices: entries.map { Device(name: $0.displayName, state: $0.state.rawValue, protocols: $0.protocolDisplayNames) },
                    routes: rows)
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                console.write(String(decoding: try encoder.encode(report), as: UTF8.self))
            } else {
                for entry in entries {
                    console.write("\(entry.displayName): \(entry.state.rawValue) via \(entry.protocolDisplayNames.joined(separator: ", "))")
                }
                console.write(environment.usesDaemon ? "Connected to mediarouted." : "Routing system in this process.")
                console.write(routes.isEmpty ? "No active routes." : "Active routes: \(routes.map(\.routeDisplayName).joined(separator: ", "))")
                for route in routes {
                    guard let audio = await route.audioStatistics() else { continue }
                    console.write(
                        "  \(route.routeDisplayName): \(audio.active ? "streaming" : "stream ended") \(audio.format.name), "
                            + "\(audio.framesDelivered) frames played, \(audio.underruns) underruns, latency \(audio.latencyMicroseconds / 1000) ms"
                            + (audio.groupLeadMicroseconds > 0 ? ", \(audio.groupLeadMicroseconds / 1000) ms after the group's slowest" : ""))
                    if let details = await route.status()?.details, let clock = details.deviceClockPPM {
                        let offset = Double(details.timelineOffsetMicroseconds ?? 0) / 1000
                        func signed(_ value: Double) -> String { (value >= 0 ? "+" : "") + String((value * 10).rounded() / 10) }
                        let correction = details.driftCorrectionPPM.map { ", sent \(signed($0)) ppm faster" } ?? ", not corrected"
                        console.write("  \(route.routeDisplayName): device clock \(signed(clock)) ppm, \(signed(offset)) ms off its timeline\(correction)")
                    }
                }
            }
            await environment.shutdown()
        }
    }
}

/// Waits until playback leaves idle/loading/buffering (or `timeout`); returns the state then.
func waitForPlaybackStart(_ control: any InterfaceControllable, within timeout: Duration) async -> PlaybackSnapshot.State {
    let changes = control.changes()
    let (settled, continuation) = AsyncStream.makeStream(of: PlaybackSnapshot.State.self)
    let watcher = Task {
        for await snapshot in changes where ![.idle, .loading, .buffering].contains(snapshot.state) {
            continuation.yield(snapshot.state)
            break
        }
        continuation.finish()
    }
    defer { watcher.cancel() }
    return await first(of: settled, within: timeout) ?? control.playbackState
}

/// Shows position/duration on one updating line (a terminal) or a line a second, until the
/// media ends, `seconds` pass, or SIGINT; returns whether the media ended.
func showPlayback(_ control: any InterfaceControllable, for seconds: Double?, console: any Console) async -> Bool {
    let clock = SystemHostClock()
    let end = seconds.map { clock.now() + .seconds(double: $0) }
    let interrupted = InterruptSignal.install()
    defer { InterruptSignal.restore(interrupted) }
    var sawPlaying = false
    while end.map({ clock.now() < $0 }) ?? true {
        if InterruptSignal.wasRaised { break }
        let snapshot = control.snapshot
        let state = snapshot.state
        if state == .playing { sawPlaying = true }
        let duration = snapshot.timeRange.map { " / \(MediaRouteCommands.seconds($0.upperBound))" } ?? snapshot.metadata.duration.map { " / \(MediaRouteCommands.seconds($0))" } ?? ""
        console.status("  \(state.rawValue) \(MediaRouteCommands.seconds(control.currentPlaybackPosition))\(duration)")
        if state == .ended || state == .failed || (sawPlaying && state == .idle) { return true }
        let step: Duration = end.map { min(.seconds(1), $0 - clock.now()) } ?? .seconds(1)
        guard step > .zero else { break }
        try? await clock.sleep(for: step)
    }
    return false
}

/// Notes Ctrl-C (SIGINT) while a command plays in the foreground, so that it can end the route cleanly.
enum InterruptSignal {
    /// Set from the signal handler: an atomic store is async-signal-safe.
    static let raised = Atomic<Bool>(false)
    static var wasRaised: Bool { raised.load(ordering: .relaxed) }

    static func install() -> sighandler_t? {
        raised.store(false, ordering: .relaxed)
        return signal(SIGINT) { _ in InterruptSignal.raised.store(true, ordering: .relaxed) }
    }

    static func restore(_ previous: sighandler_t?) {
        signal(SIGINT, previous)
    }
}

/// Sends a playback command to the session on the route of `device` that mediarouted holds.
func commandPlayback(_ command: PlaybackCommand, common: CommonOptions, device: String, console: any Console) async throws {
    let environment = try await common.environment(console: console)
    defer { Task { await environment.shutdown() } }
    guard let daemon = environment.daemon else {
        throw CommandFailure("no route plays in this process: pause, resume and seek act on the routes mediarouted holds")
    }
    let entries = await environment.discover(seconds: 0.3)
    let name = resolveDeviceName(device, entries: entries) ?? device
    guard let route = environment.controller.routes.named(name) else {
        throw CommandFailure("\(device) has no active route")
    }
    do {
        try await daemon.commandPlayback(command, on: route.session)
    } catch {
        throw CommandFailure("\(route.routeDisplayName): \(error)")
    }
    let what = switch command {
    case .pause: "paused"
    case .play: "playing"
    case .seek(let position): "at \(seconds(position))"
    default: "done"
    }
    console.write("\(route.routeDisplayName): \(what)")
}

/// Where `mediaroutectl` in its own process keeps route suggestions: `$XDG_STATE_HOME/mediaroute`
/// (or `~/.local/state/mediaroute`); nil when neither can be made.
func userSuggestionsPath() -> String? {
    let environment = ProcessInfo.processInfo.environment
    guard let base = environment["XDG_STATE_HOME"] ?? environment["HOME"].map({ $0 + "/.local/state" }) else { return nil }
    let directory = base + "/mediaroute"
    guard (try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)) != nil else { return nil }
    return directory + "/route-suggestions.json"
}

/// What `play` tells the suggestions: the person picked `route` for `url` (video by its type).
func rememberChoice(of route: SystemRoute, for url: URL, environment: RoutingEnvironment) async {
    let videoExtensions: Set<String> = ["mp4", "mkv", "webm", "mov", "avi", "m4v", "ts", "m3u8", "mpd"]
    let content = PlaybackContent(isVideo: videoExtensions.contains(url.pathExtension.lowercased()), isLongForm: false)
    guard let entry = environment.controller.routes.first(where: { $0.session == route.session }) else { return }
    let deviceID = await environment.controller.deviceID(of: entry)
    if let daemon = environment.daemon {
        try? await daemon.recordRouteChoice(application: "org.mediaroute.ctl", content: content, deviceID: deviceID)
    } else if !environment.simulatesDevices, let path = userSuggestionsPath() {
        // Simulated devices are not remembered: their ids mean nothing on the next run.
        await RouteSuggestionStore(path: path).record(.init(
            application: "org.mediaroute.ctl", content: content, hour: currentLocalHour(), deviceID: deviceID,
            displayName: route.routeDisplayName))
    }
}

/// The display name an entry matching `name` (its id or display name) has.
func resolveDeviceName(_ name: String, entries: [RoutePickerEntry]) -> String? {
    entries.named(name)?.displayName
}



/// Stops the route's session, if any, and deactivates the route.
func endRoute(_ route: SystemRoute, environment: RoutingEnvironment) async {
    if let session = route.currentSession {
        await session.stop()
        route.removeSession(session)
    }
    await environment.controller.deactivate(route)
}

/// Activates `device`, applies a volume or mute change, and reports what the device confirmed.
func changeVolume(
    common: CommonOptions, device: String, pin: String?, console: any Console,
    change: (SystemRoute) async throws -> Void,
    report: (SystemRoute, (volume: Float, muted: Bool)?) -> String
) async throws {
    let environment = try await common.environment(console: console)
    let route = try await activate(device, pin: pin, discoverySeconds: 5, environment: environment, console: console)
    let changes = route.volumeChanges()
    do {
        try await change(route)
    } catch {
        await environment.shutdown()
        throw CommandFailure("\(error)")
    }
    console.write(report(route, await first(of: changes, within: .seconds(2))))
    await environment.shutdown()
}

/// The first element of `stream` within `timeout`, or nil.
func first<Element: Sendable>(of stream: AsyncStream<Element>, within timeout: Duration) async -> Element? {
    await withTaskGroup(of: Element?.self) { group in
        group.addTask {
            for await element in stream { return element }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let result = await group.next() ?? nil
        group.cancelAll()
        return result
    }
}
