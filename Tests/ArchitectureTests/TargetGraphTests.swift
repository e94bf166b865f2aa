import Foundation
import Testing

/// Docs/architecture.md ends with every target and what it depends on; this test holds that
/// list to the manifest, so the page cannot drift from Package.swift. When a target or an
/// edge changes, the failure prints the list to paste between the page's markers.
@Suite(.timeLimit(.minutes(1))) struct TargetGraphTests {
    static let begin = "<!-- target-graph: begin (checked by ArchitectureTests.TargetGraphTests) -->"
    static let end = "<!-- target-graph: end -->"

    /// The list as the page shows it: layer by layer from the bottom, one row per target.
    static func rendered(_ graph: [String: [String]]) -> String {
        let placed = graph.keys.filter { LayeringTests.ranks[$0] != nil }
        let ordered = placed.sorted { (LayeringTests.ranks[$0]!, $0) < (LayeringTests.ranks[$1]!, $1) }
        var lines = ["| target | depends on (targets of this package) |", "|---|---|"]
        for target in ordered {
            let dependencies = (graph[target] ?? []).filter { graph[$0] != nil }.sorted()
            lines.append("| `\(target)` | \(dependencies.isEmpty ? "—" : dependencies.map { "`\($0)`" }.joined(separator: ", ")) |")
        }
        return lines.joined(separator: "\n")
    }

    @Test func theArchitecturePageListsTheManifestsTargetsAndEdges() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let page = try String(contentsOf: root.appendingPathComponent("Docs/architecture.md"), encoding: .utf8)
        let start = try #require(page.range(of: Self.begin), "the page has the target graph's markers")
        let stop = try #require(page.range(of: Self.end, range: start.upperBound..<page.endIndex))
        let shown = page[start.upperBound..<stop.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines)
        let expected = Self.rendered(try await LayeringTests.declaredDependencies())
        #expect(expected.split(separator: "\n").count > 40, "the manifest's targets were read")
        #expect(shown == expected, "Docs/architecture.md's target graph differs from Package.swift; put this between its markers:\n\(expected)")
    }
}
