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

/// Parses untrusted XML with Expat: no DOCTYPE at all (so no DTD, no entity of
/// the document's own, nothing ever fetched), only the five predefined entities
/// and character references, bounded size, depth and element count.
///
/// Namespaces are resolved here rather than by Expat: devices in the field send
/// prefixes they never declare (`dlna:X_DLNADOC`), which Expat's namespace mode
/// refuses as a whole document; here such an element keeps its local name and
/// has no namespace, as it had with libxml2.
public struct XMLParser: Sendable {
    public var maximumBytes: Int
    public var maximumDepth: Int
    public var maximumElements: Int

    public init(maximumBytes: Int = 256 * 1024, maximumDepth: Int = 32, maximumElements: Int = 10_000) {
        self.maximumBytes = maximumBytes
        self.maximumDepth = maximumDepth
        self.maximumElements = maximumElements
    }

    /// The root element of `bytes`.
    public func parse(_ bytes: [UInt8]) throws(XMLError) -> XMLElement {
        guard bytes.count <= maximumBytes, bytes.count <= Int(Int32.max) else { throw XMLError(.tooLarge, "\(bytes.count) bytes (limit \(maximumBytes))") }
        guard !bytes.isEmpty else { throw XMLError(.malformed, "empty document") }
        if Self.containsDoctype(bytes) { throw XMLError(.doctypeForbidden, "a DOCTYPE declaration is not accepted") }
        guard let parser = XML_ParserCreate(nil) else { throw XMLError(.malformed, "no parser (out of memory)") }
        defer { XML_ParserFree(parser) }
        let builder = XMLTreeBuilder(parser: parser, maximumDepth: maximumDepth, maximumElements: maximumElements)
        let status = withExtendedLifetime(builder) {
            XML_SetUserData(parser, Unmanaged.passUnretained(builder).toOpaque())
            XML_SetElementHandler(parser, { context, name, attributes in
                guard let context, let name else { return }
                XMLTreeBuilder.from(context).start(name, attributes)
            }, { context, _ in
                guard let context else { return }
                XMLTreeBuilder.from(context).end()
            })
            XML_SetCharacterDataHandler(parser) { context, characters, length in
                guard let context, let characters, length > 0 else { return }
                XMLTreeBuilder.from(context).characters(characters, Int(length))
            }
            // The byte scan above catches a DOCTYPE in UTF-8; these catch one in any other encoding.
            XML_SetStartDoctypeDeclHandler(parser) { context, _, _, _, _ in
                guard let context else { return }
                XMLTreeBuilder.from(context).fail(XMLError(.doctypeForbidden, "a DOCTYPE declaration is not accepted"))
            }
            XML_SetExternalEntityRefHandler(parser) { _, _, _, _, _ in Int32(XML_STATUS_ERROR.rawValue) }
            XML_SetParamEntityParsing(parser, XML_PARAM_ENTITY_PARSING_NEVER)
            return bytes.withUnsafeBufferPointer { buffer in
                buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                    XML_Parse(parser, $0, Int32(buffer.count), 1)
                }
            }
        }
        if let failure = builder.failure { throw failure }
        guard status == XML_STATUS_OK else {
            let code = XML_GetErrorCode(parser)
            let message = XML_ErrorString(code).map { String(cString: $0) } ?? "not well-formed"
            throw XMLError(.malformed, "\(message) at line \(XML_GetCurrentLineNumber(parser))")
        }
        guard let root = builder.root else { throw XMLError(.malformed, "no root element") }
        return root
    }

    /// Parses a string (UTF-8).
    public func parse(_ text: String) throws(XMLError) -> XMLElement { try parse(Array(text.utf8)) }

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

/// Builds the ``XMLElement`` tree from Expat's callbacks, within the limits; the
/// first limit crossed stops the parser and is the error.
private final class XMLTreeBuilder {
    private let parser: XML_Parser
    private let maximumDepth: Int
    private let maximumElements: Int
    /// The open elements, innermost last, each with its own text so far and the
    /// namespace bindings it declared (prefix → URI; "" is the default namespace).
    private var open: [(element: XMLElement, text: [UInt8], bindings: [String: String])] = []
    private var elements = 0
    private(set) var root: XMLElement?
    private(set) var failure: XMLError?

    init(parser: XML_Parser, maximumDepth: Int, maximumElements: Int) {
        self.parser = parser
        self.maximumDepth = maximumDepth
        self.maximumElements = maximumElements
    }

    static func from(_ context: UnsafeMutableRawPointer) -> XMLTreeBuilder {
        Unmanaged<XMLTreeBuilder>.fromOpaque(context).takeUnretainedValue()
    }

    func fail(_ error: XMLError) {
        if failure == nil { failure = error }
        XML_StopParser(parser, XML_Bool(XML_FALSE))
    }

    func start(_ qualifiedName: UnsafePointer<CChar>, _ attributes: UnsafeMutablePointer<UnsafePointer<CChar>?>?) {
        guard failure == nil else { return }
        guard open.count < maximumDepth else { return fail(XMLError(.tooComplex, "nested deeper than \(maximumDepth)")) }
        elements += 1
        guard elements <= maximumElements else { return fail(XMLError(.tooComplex, "more than \(maximumElements) elements")) }
        var named: [String: String] = [:]
        var bindings: [String: String] = [:]
        if var pair = attributes {
            while let name = pair.pointee, let value = (pair + 1).pointee {
                let (prefix, local) = Self.split(name)
                if prefix == nil && local == "xmlns" {
                    bindings[""] = String(cString: value)
                } else if prefix == "xmlns" {
                    bindings[local] = String(cString: value)
                } else {
                    named[local] = String(cString: value)
                }
                pair += 2
            }
        }
        let (prefix, local) = Self.split(qualifiedName)
        let namespace = resolve(prefix ?? "", declaredHere: bindings).flatMap { $0.isEmpty ? nil : $0 }
        open.append((XMLElement(name: local, namespace: namespace, attributes: named), [], bindings))
    }

    func end() {
        guard failure == nil, let (element, text, _) = open.popLast() else { return }
        var closed = element
        closed.text = String(decoding: text, as: UTF8.self)
        if open.isEmpty {
            root = closed
        } else {
            open[open.count - 1].element.children.append(closed)
        }
    }

    func characters(_ characters: UnsafePointer<CChar>, _ count: Int) {
        guard failure == nil, !open.isEmpty else { return }
        characters.withMemoryRebound(to: UInt8.self, capacity: count) {
            open[open.count - 1].text.append(contentsOf: UnsafeBufferPointer(start: $0, count: count))
        }
    }

    /// The URI bound to `prefix` by this element or the nearest enclosing one that binds it.
    private func resolve(_ prefix: String, declaredHere: [String: String]) -> String? {
        if let uri = declaredHere[prefix] { return uri }
        for scope in open.reversed() {
            if let uri = scope.bindings[prefix] { return uri }
        }
        return nil
    }

    /// `prefix:local` split at its first colon (nil prefix when there is none).
    private static func split(_ name: UnsafePointer<CChar>) -> (prefix: String?, local: String) {
        let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(name).assumingMemoryBound(to: UInt8.self), count: strlen(name))
        guard let colon = bytes.firstIndex(of: 0x3A), colon > 0, colon < bytes.count - 1 else {
            return (nil, String(decoding: bytes, as: UTF8.self))
        }
        return (String(decoding: bytes[..<colon], as: UTF8.self), String(decoding: bytes[(colon + 1)...], as: UTF8.self))
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
