import CLibXML2

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

/// Why a document was refused.
public struct XMLError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// More bytes than the limit.
        case tooLarge
        /// A DOCTYPE: UPnP documents never need one, and DTDs carry entity attacks.
        case doctypeForbidden
        /// Not well-formed XML (truncated, bad syntax, bad encoding).
        case malformed
        /// Deeper, or with more elements, than the limits.
        case tooComplex
        /// Well-formed, but not the document expected (root, namespace, required element).
        case unexpectedContent
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}

/// Parses untrusted XML with libxml2: no network, no DTD loading, no entity
/// substitution, no DOCTYPE at all, bounded size, depth and element count.
public struct XMLParser: Sendable {
    public var maximumBytes: Int
    public var maximumDepth: Int
    public var maximumElements: Int

    public init(maximumBytes: Int = 256 * 1024, maximumDepth: Int = 32, maximumElements: Int = 10_000) {
        self.maximumBytes = maximumBytes
        self.maximumDepth = maximumDepth
        self.maximumElements = maximumElements
    }

    private static let initialized: Bool = {
        xmlInitParser()
        return true
    }()

    /// The root element of `bytes`.
    public func parse(_ bytes: [UInt8]) throws(XMLError) -> XMLElement {
        guard bytes.count <= maximumBytes, bytes.count <= Int(Int32.max) else { throw XMLError(.tooLarge, "\(bytes.count) bytes (limit \(maximumBytes))") }
        guard !bytes.isEmpty else { throw XMLError(.malformed, "empty document") }
        if Self.containsDoctype(bytes) { throw XMLError(.doctypeForbidden, "a DOCTYPE declaration is not accepted") }
        _ = Self.initialized
        // NONET: never fetch; no NOENT/DTDLOAD/DTDATTR: entities stay unexpanded references;
        // NOERROR/NOWARNING: errors come back to us, not on stderr.
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue | XML_PARSE_NOCDATA.rawValue)
        let document = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                xmlReadMemory($0, Int32(buffer.count), "untrusted.xml", nil, options)
            }
        }
        guard let document else {
            var detail = "not well-formed"
            if let error = xmlGetLastError(), let message = error.pointee.message {
                detail = String(cString: message).trimmedXMLSpace
            }
            throw XMLError(.malformed, detail)
        }
        defer { xmlFreeDoc(document) }
        guard document.pointee.intSubset == nil else { throw XMLError(.doctypeForbidden, "a DOCTYPE declaration is not accepted") }
        guard let root = xmlDocGetRootElement(document) else { throw XMLError(.malformed, "no root element") }
        var count = 0
        return try convert(root, depth: 1, count: &count)
    }

    /// Parses a string (UTF-8).
    public func parse(_ text: String) throws(XMLError) -> XMLElement { try parse(Array(text.utf8)) }

    private func convert(_ node: xmlNodePtr, depth: Int, count: inout Int) throws(XMLError) -> XMLElement {
        guard depth <= maximumDepth else { throw XMLError(.tooComplex, "nested deeper than \(maximumDepth)") }
        count += 1
        guard count <= maximumElements else { throw XMLError(.tooComplex, "more than \(maximumElements) elements") }
        var element = XMLElement(name: String(cString: node.pointee.name))
        if let namespace = node.pointee.ns, let href = namespace.pointee.href { element.namespace = String(cString: href) }
        var attribute = node.pointee.properties
        while let current = attribute {
            let name = String(cString: current.pointee.name)
            var value: [UInt8] = []
            var part = current.pointee.children
            while let text = part {
                if text.pointee.type == XML_ENTITY_REF_NODE {
                    throw XMLError(.malformed, "entity reference in attribute \(name) is not accepted")
                }
                if let content = text.pointee.content { Self.append(content, to: &value) }
                part = text.pointee.next
            }
            element.attributes[name] = String(decoding: value, as: UTF8.self)
            attribute = current.pointee.next
        }
        var child = node.pointee.children
        var text: [UInt8] = []
        while let current = child {
            switch current.pointee.type {
            case XML_ELEMENT_NODE:
                element.children.append(try convert(current, depth: depth + 1, count: &count))
            case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
                if let content = current.pointee.content { Self.append(content, to: &text) }
            case XML_ENTITY_REF_NODE:
                // Undeclared entity references stay unexpanded; they are never substituted.
                throw XMLError(.malformed, "entity reference &\(String(cString: current.pointee.name)); is not accepted")
            default:
                break
            }
            child = current.pointee.next
        }
        element.text = String(decoding: text, as: UTF8.self)
        return element
    }

    private static func append(_ content: UnsafePointer<xmlChar>, to bytes: inout [UInt8]) {
        var pointer = content
        while pointer.pointee != 0 {
            bytes.append(pointer.pointee)
            pointer += 1
        }
    }

    static func containsDoctype(_ bytes: [UInt8]) -> Bool {
        let needle = Array("<!DOCTYPE".utf8)
        guard bytes.count >= needle.count else { return false }
        for start in 0...(bytes.count - needle.count) where bytes[start] == 0x3C {
            if bytes[start..<start + needle.count].elementsEqual(needle, by: { upper($0) == $1 }) { return true }
        }
        return false
        func upper(_ byte: UInt8) -> UInt8 { (0x61...0x7A).contains(byte) ? byte - 0x20 : byte }
    }
}

extension String {
    /// Without leading and trailing XML white space (space, tab, CR, LF).
    public var trimmedXMLSpace: String {
        let space: Set<Character> = [" ", "\t", "\r", "\n"]
        guard let start = firstIndex(where: { !space.contains($0) }), let end = lastIndex(where: { !space.contains($0) }) else { return "" }
        return String(self[start...end])
    }

    /// Escaped for XML text and attribute values.
    public var xmlEscaped: String {
        var escaped = ""
        escaped.reserveCapacity(utf8.count)
        for character in self {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&apos;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
