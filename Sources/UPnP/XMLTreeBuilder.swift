import CExpat
#if canImport(Glibc)
import Glibc
#endif

/// Builds the ``XMLElement`` tree from Expat's callbacks, within the limits; the
/// first limit crossed stops the parser and is the error.
final class XMLTreeBuilder {
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
