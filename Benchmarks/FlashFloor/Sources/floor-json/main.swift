import FoundationEssentials

struct Request: Codable { var type: String; var requestId: Int; var media: [String: String]? }

let encoded = try JSONEncoder().encode(Request(type: "LOAD", requestId: 1, media: ["contentId": CommandLine.arguments[0]]))
let decoded = try JSONDecoder().decode(Request.self, from: encoded)
print(decoded.type, encoded.count)
