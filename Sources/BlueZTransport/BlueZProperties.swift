import DBus

/// One interface's properties (`a{sv}`), by name, as BlueZ last reported them.
///
/// An array of names and values rather than a `Dictionary`: a device has about
/// fifteen properties, looked up by a scan as fast as by hashing, and the cache
/// of a thousand devices is then half the size (a dictionary of fifteen takes
/// 32 buckets) and is built with no hashing at all, which is most of what
/// handling an `InterfacesAdded` cost (see Docs/benchmarks.md, issue 5).
public struct BlueZProperties: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// A property's name and value (variants already unwrapped).
    public struct Entry: Sendable, Hashable {
        public let name: String
        public var value: DBusValue

        /// A property; a variant `value` is unwrapped.
        public init(name: String, value: DBusValue) {
            self.name = name
            self.value = value.unwrapped
        }
    }

    public private(set) var entries: [Entry]

    public init() { entries = [] }

    public init(_ values: [String: DBusValue]) {
        entries = values.sorted { $0.key < $1.key }.map { Entry(name: $0.key, value: $0.value.unwrapped) }
    }

    public init(dictionaryLiteral elements: (String, DBusValue)...) {
        self.init(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }

    /// The entries of an `a{sv}` (or any string-keyed dictionary) value; nil for anything else.
    /// A name given twice keeps its last value, as a dictionary would.
    public init?(_ value: DBusValue) {
        guard case .dictionary(_, _, let pairs) = value.unwrapped else { return nil }
        self.init(uniquing: pairs.compactMap { pair in pair.key.string.map { Entry(name: $0, value: pair.value.unwrapped) } })
    }

    /// `entries` as they came; a name given twice keeps its last value, as a dictionary would.
    public init(uniquing entries: [Entry]) {
        // The usual case, a few names all different: taken as they are.
        if entries.count <= 32,
            !entries.indices.contains(where: { index in entries[..<index].contains { $0.name == entries[index].name } })
        {
            self.entries = entries
            return
        }
        // A scan finds a repeated name among a few; a long (hostile) list gets an index instead.
        var unique: [Entry] = []
        unique.reserveCapacity(entries.count)
        var index: [String: Int]? = entries.count > 32 ? [:] : nil
        for entry in entries {
            let existing = index != nil ? index![entry.name] : unique.firstIndex { $0.name == entry.name }
            if let existing {
                unique[existing] = entry
            } else {
                index?[entry.name] = unique.count
                unique.append(entry)
            }
        }
        self.entries = unique
    }

    public subscript(name: String) -> DBusValue? {
        get { entries.first { $0.name == name }?.value }
        set {
            let index = entries.firstIndex { $0.name == name }
            switch (index, newValue) {
            case (let index?, let value?): entries[index].value = value.unwrapped
            case (let index?, nil): entries.remove(at: index)
            case (nil, let value?): entries.append(Entry(name: name, value: value.unwrapped))
            case (nil, nil): break
            }
        }
    }

    /// Takes every value of `changes`, replacing those with the same name.
    public mutating func merge(_ changes: [String: DBusValue]) {
        for (name, value) in changes { self[name] = value }
    }

    /// Takes every value of `changes`, replacing those with the same name.
    public mutating func merge(_ changes: BlueZProperties) {
        for entry in changes.entries { self[entry.name] = entry.value }
    }

    @discardableResult
    public mutating func removeValue(forKey name: String) -> DBusValue? {
        guard let index = entries.firstIndex(where: { $0.name == name }) else { return nil }
        return entries.remove(at: index).value
    }

    public var names: [String] { entries.map(\.name) }
    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }

    /// The same as a dictionary.
    public var dictionary: [String: DBusValue] {
        Dictionary(entries.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    public func makeIterator() -> IndexingIterator<[Entry]> { entries.makeIterator() }

    public var description: String { dictionary.description }

    /// Equal when they hold the same values, in whatever order.
    public static func == (lhs: BlueZProperties, rhs: BlueZProperties) -> Bool { lhs.dictionary == rhs.dictionary }
    public func hash(into hasher: inout Hasher) { hasher.combine(dictionary) }
}
