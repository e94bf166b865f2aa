import Foundation
import Testing

/// Docs/architecture.md's "Where is …" table names files that exist.
@Suite struct DocumentationTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func everyFileTheWhereIsTableNamesExists() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("Docs/architecture.md"), encoding: .utf8)
        let section = try #require(text.components(separatedBy: "## Where is …").dropFirst().first?.components(separatedBy: "\n## ").first)
        let rows = section.split(separator: "\n").filter { $0.hasPrefix("| ") && !$0.hasPrefix("| where is") && !$0.hasPrefix("|---") }
        #expect(rows.count >= 20, "the table was read: \(rows.count) rows")
        var missing: [String] = []
        for row in rows {
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let paths = (cells.last ?? "").split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
            if paths.isEmpty { missing.append("no file in: \(row)") }
            for path in paths where !FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(path).path) {
                missing.append(path)
            }
        }
        #expect(missing.isEmpty, "\(missing)")
    }
}
