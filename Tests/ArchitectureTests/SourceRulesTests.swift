import Foundation
import Testing

/// Rules the compiler cannot hold, checked over the sources' text.
@Suite struct SourceRulesTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    /// Every Swift file under Sources, with its lines.
    static func swiftFiles() throws -> [(path: String, lines: [Substring])] {
        let enumerator = try #require(FileManager.default.enumerator(atPath: sources.path))
        var files: [(String, [Substring])] = []
        for case let relative as String in enumerator where relative.hasSuffix(".swift") {
            let text = try String(contentsOfFile: sources.appendingPathComponent(relative).path, encoding: .utf8)
            files.append((relative, text.split(separator: "\n", omittingEmptySubsequences: false)))
        }
        return files
    }

    /// `@unchecked Sendable` tells the compiler to trust us: each one carries the comment that
    /// says why it is safe (what is immutable, which thread alone touches the rest).
    @Test func everyUncheckedSendableSaysWhyItIsSafe() throws {
        var unexplained: [String] = []
        var count = 0
        for (path, lines) in try Self.swiftFiles() {
            for (index, line) in lines.enumerated() where line.contains("@unchecked Sendable") && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                count += 1
                let around = lines[max(0, index - 6)..<min(lines.count, index + 4)]
                if !around.contains(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }) {
                    unexplained.append("\(path):\(index + 1)")
                }
            }
        }
        #expect(count > 0, "the scan found the sources")
        #expect(unexplained.isEmpty, "an @unchecked Sendable without the comment that proves it safe: \(unexplained)")
    }

    /// One clock: library code waits and stamps time on the injected `HostClock`, so tests run
    /// on `ManualHostClock`. Reading the time another way is allowed only in these places.
    static let timeAllowed: [String: String] = [
        "MediaClock/": "the one source of time",
        "IOReactor/": "the production reactor's timers",
        "MediaRouteExecutors/": "the executors' own deadlines",
        "MediaRouteCommands/": "the CLI at the edge",
        "mediarouted/": "the executable", "mediaroutectl/": "the executable",
        "MediaRouteFuzzing/": "harnesses",
        "MediaRouteTesting/": "the test kit: waits on real peers (a private bus, the BlueZ mock) and a recording manager's limit",
        "MPRIS/MPRISBridge.swift": "the default of its injected wall clock (MPRIS speaks wall time)",
        "NowPlaying/NowPlayingCenter.swift": "the default of its injected wall clock",
        "NowPlayingRouting/RoutedSession.swift": "host time turned into the wall time Now Playing speaks",
        "MediaRouteDaemon/PushedSessionExtension.swift": "a pushed update without a timestamp is as of its arrival, in wall time",
        "LANTransport/MulticastSockets.swift": "the flood budget on NIO's event loop, which has its own clock",
        "RoutingModel/SampleBuffer.swift": "the samples' timeline (CLOCK_MONOTONIC) for whoever stamps buffers without a scheduler",
        "RAOPExtension/RAOPStream.swift": "RTP and NTP times on the samples' timeline (CLOCK_MONOTONIC), which the buffers' presentation times are on",
    ]

    @Test func libraryCodeReadsTimeOnlyFromTheInjectedClock() throws {
        let patterns = [
            "ContinuousClock.now", "ContinuousClock()", "= .now", " .now + ", "Task.sleep", "Date()", "SystemHostClock().now()", "NIODeadline.now()",
            "clock_gettime", "clockNow()",
        ]
        var found: [String] = []
        var usedAllowances: Set<String> = []
        for (path, lines) in try Self.swiftFiles() {
            for (index, line) in lines.enumerated() {
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                guard patterns.contains(where: { code.contains($0) }) else { continue }
                if let allowance = Self.timeAllowed.keys.first(where: { path.hasPrefix($0) }) {
                    usedAllowances.insert(allowance)
                } else {
                    found.append("\(path):\(index + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(found.isEmpty, "time read outside the injected clock:\n\(found.joined(separator: "\n"))")
        // A file's allowance goes with its last use (a whole target's is policy, not debt).
        let unused = Set(Self.timeAllowed.keys.filter { $0.hasSuffix(".swift") }).subtracting(usedAllowances).sorted()
        #expect(unused.isEmpty, "no longer needed: take these off the allow-list: \(unused)")
    }
}

/// One primary type per file, named after it: a newcomer finds `HTTPServerLimits` in
/// `HTTPServerLimits.swift`. Helpers a file keeps to itself (not public) may sit beside it.
@Suite struct FileLayoutTests {
    /// Generated code and entry points, where the layout is not ours to choose.
    static let exempt: Set<String> = ["CastChannel/cast_channel.pb.swift"]

    @Test func everyFileDeclaresAtMostOnePublicTypeAndIsNamedAfterATypeItDeclaresOrExtends() throws {
        let declaration = try Regex(#"^(?:@\w+(?:\([^)]*\))?\s+)*(?:public |package |open |internal |fileprivate |private )?(?:final )?(?:struct|enum|class|actor|protocol) (\w+)"#)
        let publicDeclaration = try Regex(#"^(?:@\w+(?:\([^)]*\))?\s+)*(?:public |package |open )(?:final )?(?:struct|enum|class|actor|protocol) (\w+)"#)
        let extensionDeclaration = try Regex(#"^(?:public |package )?extension (\w+)"#)
        var crowded: [String] = []
        var misnamed: [String] = []
        var files = 0
        for (path, lines) in try SourceRulesTests.swiftFiles() where !Self.exempt.contains(path) {
            files += 1
            var publicTypes: [String] = []
            var named: Set<String> = []
            for line in lines {
                if let match = line.firstMatch(of: publicDeclaration), let name = match.output[1].substring { publicTypes.append(String(name)) }
                if let match = line.firstMatch(of: declaration), let name = match.output[1].substring { named.insert(String(name)) }
                if let match = line.firstMatch(of: extensionDeclaration), let name = match.output[1].substring { named.insert(String(name)) }
            }
            if publicTypes.count > 1 { crowded.append("\(path): \(publicTypes)") }
            let base = String(((path as NSString).lastPathComponent as NSString).deletingPathExtension.split(separator: "+").first ?? "")
            if !named.isEmpty, !named.contains(base) { misnamed.append("\(path): declares \(named.sorted())") }
        }
        #expect(files > 200, "the scan found the sources")
        #expect(crowded.isEmpty, "one public type per file:\n\(crowded.joined(separator: "\n"))")
        #expect(misnamed.isEmpty, "name each file after its primary type:\n\(misnamed.joined(separator: "\n"))")
    }
}
