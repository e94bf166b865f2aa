#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Finds MediaRoute properties with bad values in udev rules files, by file and
/// line: udev itself accepts any value, and its database does not record which
/// rule set a property.
public enum UdevRulesChecker {
    /// The directories udev reads rules from, in its order of precedence.
    public static let standardDirectories = ["/etc/udev/rules.d", "/run/udev/rules.d", "/usr/local/lib/udev/rules.d", "/usr/lib/udev/rules.d", "/lib/udev/rules.d"]

    /// Checks every `*.rules` file in `directories`.
    public static func check(directories: [String] = standardDirectories) -> [ConfigurationError] {
        var errors: [ConfigurationError] = []
        var seen: Set<String> = []
        for directory in directories {
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".rules") }.sorted()
            for name in names where seen.insert(name).inserted {
                let path = directory + "/" + name
                guard let data = FileManager.default.contents(atPath: path), data.count <= 4 << 20 else { continue }
                errors += check(String(decoding: data, as: UTF8.self), file: path)
            }
        }
        return errors
    }

    /// Checks the text of one rules file.
    public static func check(_ text: String, file: String) -> [ConfigurationError] {
        var errors: [ConfigurationError] = []
        var number = 0
        var continued = ""
        var startLine = 0
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            var line = String(raw)
            if continued.isEmpty { startLine = number }
            if line.hasSuffix("\\") {
                line.removeLast()
                continued += line
                continue
            }
            line = continued + line
            continued = ""
            let trimmed = line.trimmingSpaces
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            errors += assignments(in: trimmed).compactMap { key, value in
                UdevProperty.validate(key, value).map { ConfigurationError(file: file, line: startLine, $0) }
            }
        }
        return errors
    }

    /// `ENV{MEDIAROUTE_…}="value"` assignments (`=`, `:=`, `+=`; not `==`/`!=` matches).
    static func assignments(in line: String) -> [(String, String)] {
        var found: [(String, String)] = []
        var rest = Substring(line)
        while let start = rest.firstRange(of: "ENV{MEDIAROUTE_") {
            rest = rest[start.lowerBound...]
            guard let close = rest.firstIndex(of: "}") else { break }
            let key = String(rest[rest.index(rest.startIndex, offsetBy: 4)..<close])
            var after = rest[rest.index(after: close)...].drop { $0 == " " }
            rest = after
            var isAssignment = false
            for op in [":=", "+=", "-="] where after.hasPrefix(op) {
                after = after.dropFirst(op.count)
                isAssignment = true
            }
            if !isAssignment, after.hasPrefix("="), !after.hasPrefix("==") {
                after = after.dropFirst()
                isAssignment = true
            }
            guard isAssignment else { continue }
            after = after.drop { $0 == " " }
            guard after.hasPrefix("\""), let end = after.dropFirst().firstIndex(of: "\"") else { continue }
            found.append((key, String(after[after.index(after: after.startIndex)..<end])))
            rest = after[end...]
        }
        return found
    }
}
