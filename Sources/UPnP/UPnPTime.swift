

/// `H+:MM:SS[.F+]` durations as AVTransport uses them.
public enum UPnPTime {
    /// Seconds, or nil for `NOT_IMPLEMENTED`, empty or malformed values.
    public static func parse(_ text: String) -> Double? {
        let parts = text.trimmedXMLSpace.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, let hours = Int(parts[0]), hours >= 0, hours < 100_000,
            let minutes = Int(parts[1]), (0..<60).contains(minutes), parts[1].count == 2
        else { return nil }
        let secondsText = parts[2]
        let fields = secondsText.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard fields[0].count == 2, let seconds = Int(fields[0]), (0..<60).contains(seconds) else { return nil }
        var fraction = 0.0
        if fields.count == 2 {
            // Either decimal (`.123`) or a `F0/F1` fraction.
            let part = fields[1]
            if let slash = part.firstIndex(of: "/") {
                guard let numerator = Int(part[..<slash]), let denominator = Int(part[part.index(after: slash)...]), denominator > 0,
                    numerator >= 0, numerator < denominator
                else { return nil }
                fraction = Double(numerator) / Double(denominator)
            } else {
                guard !part.isEmpty, part.count <= 9, part.allSatisfy(\.isNumber), let value = Int(part) else { return nil }
                fraction = Double(value) / Double(pow10(part.count))
            }
        }
        return Double(hours * 3600 + minutes * 60 + seconds) + fraction
    }

    /// `H:MM:SS`, with `.mmm` when the value has a fraction.
    public static func format(_ seconds: Double) -> String {
        let clamped = seconds.isFinite ? max(seconds, 0) : 0
        let milliseconds = Int((clamped * 1000).rounded())
        let whole = milliseconds / 1000
        let text = "\(whole / 3600):\(two((whole / 60) % 60)):\(two(whole % 60))"
        let fraction = milliseconds % 1000
        guard fraction != 0 else { return text }
        let digits = String(fraction)
        return text + "." + String(repeating: "0", count: 3 - digits.count) + digits
    }

    private static func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
    private static func pow10(_ exponent: Int) -> Int { (0..<exponent).reduce(1) { value, _ in value * 10 } }
}
