// Development builds only (the `SimulatedDevices` trait): the demo runs on the simulated devices.
#if SimulatedDevices
public import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
import LoopbackTransport
import MediaClock
import SystemRouting
import RoutingModel
import MediaDevice

extension MediaRouteCtl {
    /// The whole flow on the loopback devices, step by step.
    public struct Demo: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(
            abstract: "Run the whole flow on simulated devices: discover, pair, play, control, stop.")

        @OptionGroup public var common: CommonOptions
        @Option(help: "How long to discover, in seconds.") public var seconds: Double = 1.5

        public init() {}

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            var options = common
            options.simulate = true  // the demo always runs on the simulated TV and speaker
            let environment = try await options.environment(console: console, allowDaemon: false)
            let controller = environment.controller
            let observer = DemoObserver(console: console)
            controller.addObserver(observer)
            let agent = DemoPairingAgent(console: console)
            await controller.setPairingAgent(agent)

            console.write("[1/10] Discovering devices for \(seconds) s …")
            var entries = await environment.discover(seconds: seconds) { count in
                console.write("       … \(count) device(s) so far")
            }
            if !entries.contains(where: { $0.deviceType == .tv }) {
                console.write("       no TV yet; waiting up to 10 s more")
                entries = await environment.discover(seconds: 10, until: { $0.contains { $0.deviceType == .tv } })
            }
            for (index, entry) in entries.enumerated() {
                console.write("       \(index + 1). \(entry.displayName) [\(entry.deviceType.rawValue), via \(entry.protocolDisplayNames.joined(separator: " + "))]")
            }
            guard let tv = entries.first(where: { $0.deviceType == .tv }) else {
                throw CommandFailure("the demo needs a TV in the scenario, and none was found")
            }

            console.write("[2/10] Picking \(tv.displayName) (TVs are listed first)")
            console.write("[3/10] Activating: the TV asks for a pairing code")
            let route: SystemRoute
            do {
                route = try await controller.activate(deviceNamed: tv.id, features: [.urlPlayback])
            } catch {
                throw CommandFailure("activation failed: \(error)")
            }
            console.write("[4/10] Activated route to \(route.routeDisplayName) via \(route.protocolType.displayName) (symbol \(route.routeSymbolName))")

            let url = URL(string: "http://media.example/big-buck-bunny.mp4")!
            console.write("[5/10] Starting a URL session: \(url.absoluteString)")
            let session = SystemRouteSession(url: url, mode: .application)
            guard route.addSession(session) else { throw CommandFailure("the route refused the session") }
            let media: SystemRouteMediaSession
            do {
                media = try await session.start()
            } catch {
                throw CommandFailure("the session did not start: \(error)")
            }
            let control = media.playbackControl
            console.write("       state \(control.playbackState.rawValue), \(control.metadata.title ?? "untitled")")

            console.write("[6/10] Position advancing:")
            let clock = SystemHostClock()
            for _ in 0..<3 {
                try? await clock.sleep(for: .milliseconds(400))
                console.write("       \(MediaRouteCommands.seconds(control.currentPlaybackPosition)) at speed \(control.playbackSpeed)")
            }
            control.playbackSpeed = 2
            try? await clock.sleep(for: .milliseconds(400))
            console.write("       \(MediaRouteCommands.seconds(control.currentPlaybackPosition)) after switching to speed \(control.playbackSpeed)")

            console.write("[7/10] Someone turns the volume up on the TV itself …")
            let volumeChanges = route.volumeChanges()
            await environment.transport?.changeVolumeOnDevice(named: route.device.id, to: 0.8)
            guard let change = await first(of: volumeChanges, within: .seconds(3)) else {
                throw CommandFailure("the device-side volume change did not arrive")
            }
            console.write("       the box sees volume \(percent(change.volume))")

            console.write("[8/10] Data channel round trip with the TV's application")
            guard let channel = media.dataChannel else { throw CommandFailure("no session data channel") }
            let replies = channel.messages()
            try await channel.send(Data("hello TV".utf8))
            guard let reply = await first(of: replies, within: .seconds(3)) else {
                throw CommandFailure("no reply on the data channel")
            }
            console.write("       sent \"hello TV\", received \"\(String(decoding: reply, as: UTF8.self))\"")

            console.write("[9/10] Stopping playback")
            await session.stop()
            route.removeSession(session)
            console.write("       stopped at \(MediaRouteCommands.seconds(control.currentPlaybackPosition))")

            console.write("[10/10] Deactivating \(route.routeDisplayName)")
            await controller.deactivate(route)
            await observer.waitForDeactivation()
            await environment.shutdown()
            console.write("Demo finished.")
        }
    }
}

/// Prints route events as they happen.
final class DemoObserver: SystemRouteControllerObserver {
    private let console: any Console
    private let deactivated = AsyncStream.makeStream(of: Void.self)

    init(console: any Console) { self.console = console }

    func systemRouteController(_ controller: SystemRouteController, handle event: SystemRouteEvent) async -> Bool {
        switch event.reason {
        case .activate:
            console.write("       (observer) route activated: \(event.route.routeDisplayName)")
        case .deactivate:
            console.write("       (observer) route deactivated: \(event.route.routeDisplayName)")
            deactivated.continuation.yield()
        }
        return true
    }

    func waitForDeactivation() async {
        _ = await first(of: deactivated.stream, within: .seconds(3))
    }
}

/// Shows the pairing prompt and "types" the PIN the loopback TV shows.
struct DemoPairingAgent: PairingAgent {
    let console: any Console

    func pairingCode(for request: PairingRequest) async -> String? {
        console.write("       pairing prompt from \(request.device.displayName): \(request.reason)")
        console.write("       entering PIN 1234")
        return "1234"
    }
}
#endif
