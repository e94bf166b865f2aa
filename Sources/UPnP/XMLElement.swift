import CExpat
#if canImport(Glibc)
import Glibc
#endif

/// An XML element as a value: what UPnP documents need from a parsed tree.
///
/// Names are local names (the prefix is dropped); ``namespace`` keeps the URI so
/// that a document in the wrong namespace can be refused.
public struct XMLElement: Sendable, Hashable {
    public var name: String
    public var namespace: String?
    /// Attributes by local name.
    public var attributes: [String: String]
    public var children: [XMLElement]
    /// The element's own text and CDATA, concatenated (not its children's).
    public var text: String

    public init(name: String, namespace: String? = nil, attributes: [String: String] = [:], children: [XMLElement] = [], text: String = "") {
        self.name = name
        self.namespace = namespace
        self.attributes = attributes
        self.children = children
        self.text = text
    }

    /// The first child with this local name.
    public func child(_ name: String) -> XMLElement? { children.first { $0.name == name } }

    /// Every child with this local name.
    public func children(named name: String) -> [XMLElement] { children.filter { $0.name == name } }

    /// The text of the first child with this name, trimmed; nil when absent or empty.
    public func value(_ name: String) -> String? {
        guard let text = child(name)?.text.trimmedXMLSpace, !text.isEmpty else { return nil }
        return text
    }

    /// The first element with this local name at any depth (self included), depth-first.
    public func first(_ name: String) -> XMLElement? {
        if self.name == name { return self }
        for child in children {
            if let found = child.first(name) { return found }
        }
        return nil
    }
}
