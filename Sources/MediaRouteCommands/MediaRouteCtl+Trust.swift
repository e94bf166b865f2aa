public import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
import MediaDevice
import RoutingModel

extension MediaRouteCtl {
    /// What was pinned the first time a device was used, and what people decide about it.
    public struct Trust: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(
            abstract: "See and manage pinned identities: Cast certificates, AirPlay hosts and passwords, household boxes.",
            discussion: """
                A device is pinned the first time it is used; one that later presents another identity (a new \
                certificate, another host) is refused until someone accepts it, here or by confirming the prompt \
                when it is activated. Through mediarouted these are the daemon's pins; in this process, the ones in \
                $XDG_STATE_HOME/mediaroute.
                """,
            subcommands: [List.self, Forget.self, Accept.self], defaultSubcommand: List.self)

        public init() {}

        public struct List: AsyncParsableCommand {
            public static let configuration = CommandConfiguration(abstract: "List what is pinned, and any identity offered in its place.")
            @OptionGroup public var common: CommonOptions
            @Flag(help: "Print JSON.") public var json = false
            public init() {}
            public func run() async throws { try await run(console: StandardConsole()) }

            public func run(console: any Console) async throws {
                let entries = try await withTrust(common, console: console) { try await $0.list() }
                if json {
                    struct Row: Encodable {
                        let kind, id, name, pinned: String
                        let offered: String?
                    }
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                    let rows = entries.map { Row(kind: $0.kind.rawValue, id: $0.deviceID, name: $0.name, pinned: $0.pinned, offered: $0.offered) }
                    console.write(String(decoding: try encoder.encode(rows), as: UTF8.self))
                    return
                }
                if entries.isEmpty { console.write("Nothing is pinned.") }
                for entry in entries {
                    let offered = entry.offered.map { "  NOW OFFERS \($0) (mediaroutectl trust accept \"\(entry.name)\")" } ?? ""
                    console.write("\(entry.kind.rawValue)  \(entry.name)  \(entry.pinned)  [\(entry.deviceID)]\(offered)")
                }
            }
        }

        public struct Forget: AsyncParsableCommand {
            public static let configuration = CommandConfiguration(
                abstract: "Forget what is pinned for a device (its next use pins it again).")
            @OptionGroup public var common: CommonOptions
            @Argument(help: "The device's name or id.") public var name: String
            public init() {}
            public func run() async throws { try await run(console: StandardConsole()) }

            public func run(console: any Console) async throws {
                let count = try await withTrust(common, console: console) { try await $0.forget(name) }
                console.write("Forgot \(count) pinned \(count == 1 ? "identity" : "identities") of \(name).")
            }
        }

        public struct Accept: AsyncParsableCommand {
            public static let configuration = CommandConfiguration(
                abstract: "Accept the identity a device offers in place of its pinned one (only if it was reset, replaced or moved).")
            @OptionGroup public var common: CommonOptions
            @Argument(help: "The device's name or id.") public var name: String
            public init() {}
            public func run() async throws { try await run(console: StandardConsole()) }

            public func run(console: any Console) async throws {
                let count = try await withTrust(common, console: console) { try await $0.accept(name) }
                console.write("Accepted \(count) new \(count == 1 ? "identity" : "identities") of \(name).")
            }
        }
    }
}

/// The pins of mediarouted, or of the routing system in this process.
struct TrustStore: Sendable {
    let environment: RoutingEnvironment

    func list() async throws -> [PinnedIdentity] {
        if let daemon = environment.daemon { return try await daemon.pinnedIdentities() }
        return await environment.system?.pinnedIdentities() ?? []
    }

    func forget(_ name: String) async throws -> Int {
        if let daemon = environment.daemon { return try await daemon.forgetIdentity(named: name) }
        guard let system = environment.system else { throw CommandFailure("no routing system") }
        return try await system.forgetIdentity(named: name)
    }

    func accept(_ name: String) async throws -> Int {
        if let daemon = environment.daemon { return try await daemon.acceptIdentity(named: name) }
        guard let system = environment.system else { throw CommandFailure("no routing system") }
        return try await system.acceptIdentity(named: name)
    }
}

/// Runs `body` on the trust store of `common`'s environment, then shuts the environment down;
/// a failure is one line.
private func withTrust<Result: Sendable>(
    _ common: CommonOptions, console: any Console, _ body: (TrustStore) async throws -> Result
) async throws -> Result {
    let environment = try await common.environment(console: console)
    do {
        let result = try await body(TrustStore(environment: environment))
        await environment.shutdown()
        return result
    } catch let failure as CommandFailure {
        await environment.shutdown()
        throw failure
    } catch {
        await environment.shutdown()
        throw CommandFailure((error as? MediaDeviceError)?.message ?? "\(error)")
    }
}
