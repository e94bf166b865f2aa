public import DBus

/// One interface's properties (`a{sv}`), by name, as BlueZ last reported them.
///
/// An array of names and values rather than a `Dictionary`: a device has about
/// fifteen properties, looked up by a scan as fast as by hashing, and the cache
/// of a thousand devices is then half the size (a dictionary of fifteen takes
/// 32 buckets) and is built with no hashing at all, which is most of what
/// handling an `InterfacesAdded` cost (see Docs/benchmarks.md, issue 5).
public struct BlueZProperties: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// A property's name and value (variants already unwrapped).
    ///
    /// A container read from BlueZ's signals (advertising data, service data)
    /// may be kept as its checked wire bytes and decoded when `value` is read:
    /// nothing on the path from a scan to a device list reads those, and
    /// decoding them cost a third of the allocations per device.
    public struct Entry: Sendable, Hashable {
        public let name: String
        private var storage: DBusKeptValue

        public var value: DBusValue {
            get {
                switch storage {
                case .decoded(let value): value
                case .kept(let wire): wire.value.unwrapped
                }
            }
            set { storage = .decoded(newValue.unwrapped) }
        }

        /// A property; a variant `value` is unwrapped.
        public init(name: String, value: DBusValue) {
            self.name = name
            storage = .decoded(value.unwrapped)
        }

        /// A property as ``DBusBodyReader/variantKeepingContainers()`` read it.
        public init(name: String, kept: DBusKeptValue) {
            self.name = name
            storage = kept
        }

        public static func == (lhs: Entry, rhs: Entry) -> Bool { lhs.name == rhs.name && lhs.value == rhs.value }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(name)
            hasher.combine(value)
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
    public init?(_ value: DBusValue) {
        guard case .dictionary(_, _, let pairs) = value.unwrapped else { return nil }
        entries = pairs.compactMap { pair in pair.key.string.map { Entry(name: $0, value: pair.value.unwrapped) } }
    }

    /// `entries` as they came. A name given twice (no peer of ours does) is kept
    /// twice, and every lookup sees its last value, as a dictionary built from
    /// them would; checking for repeats up front cost as much as reading them.
    public init(entries: [Entry]) {
        self.entries = entries
    }

    public subscript(name: String) -> DBusValue? {
        get { entries.last { Self.same($0.name, name) }?.value }
        set {
            let index = entries.lastIndex { Self.same($0.name, name) }
            switch (index, newValue) {
            case (let index?, let value?): entries[index].value = value.unwrapped
            case (_?, nil): entries.removeAll { $0.name == name }
            case (nil, let value?): entries.append(Entry(name: name, value: value.unwrapped))
            case (nil, nil): break
            }
        }
    }

    /// Names compared by length first: most differ there, and that needs no call
    /// into the string library (lookups run for every device announced).
    private static func same(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && a == b
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
        let value = self[name]
        entries.removeAll { $0.name == name }
        return value
    }

    /// The names, each once.
    public var names: [String] { Array(dictionary.keys) }
    public var count: Int { dictionary.count }
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
