import IPNetwork

/// What a service's SCPD declares that a control point needs.
public struct ServiceDescription: Sendable, Hashable {
    /// The actions by name.
    public var actions: Set<String>
    /// Allowed ranges of numeric state variables (e.g. `Volume`).
    public var ranges: [String: ClosedRange<Int>]

    public init(actions: Set<String> = [], ranges: [String: ClosedRange<Int>] = [:]) {
        self.actions = actions
        self.ranges = ranges
    }

    public static func parse(_ bytes: [UInt8], parser: XMLParser = XMLParser()) throws(XMLError) -> ServiceDescription {
        let root = try parser.parse(bytes)
        guard root.name == "scpd", root.namespace == UPnPNamespace.service else {
            throw XMLError(.unexpectedContent, "root element is \(root.name) in \(root.namespace ?? "no namespace"), not an SCPD")
        }
        var description = ServiceDescription()
        for action in root.child("actionList")?.children(named: "action") ?? [] {
            if let name = action.value("name") { description.actions.insert(name) }
        }
        for variable in root.child("serviceStateTable")?.children(named: "stateVariable") ?? [] {
            guard let name = variable.value("name"), let range = variable.child("allowedValueRange") else { continue }
            // Bounded to 32 bits (UPnP ranges are i4/ui2 at most): the renderer does arithmetic on
            // the span, and a range near Int.min...Int.max would overflow there.
            let bounds = Int(Int32.min)...Int(UInt32.max)
            guard let low = range.value("minimum").flatMap({ Int($0) }), let high = range.value("maximum").flatMap({ Int($0) }), low <= high,
                bounds.contains(low), bounds.contains(high)
            else {
                throw XMLError(.unexpectedContent, "state variable \(name) has an invalid allowed range")
            }
            description.ranges[name] = low...high
        }
        return description
    }
}
