// swift-tools-version:6.1
// The flash floor (issue 19, item 9): what the libraries MediaRoute's brief names cost in a
// release binary before any MediaRoute code, each used once for real. Not part of the main
// package; `scripts/flash-floor.sh` builds every product with the release link and prints
// its stripped size (Docs/benchmarks.md, "Flash").
import PackageDescription

let package = Package(
    name: "FlashFloor",
    dependencies: [
        // The same requirements as the main package's Package.swift.
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.30.0"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.30.0", traits: []),
    ],
    targets: [
        // One line on standard output: the Swift runtime alone.
        .executableTarget(name: "floor-hello"),
        // swift-argument-parser: one command with an option.
        .executableTarget(
            name: "floor-cli", dependencies: [.product(name: "ArgumentParser", package: "swift-argument-parser")]),
        // Codable JSON through FoundationEssentials.
        .executableTarget(name: "floor-json"),
        // swift-nio: a TCP client with the HTTP/1.1 codec.
        .executableTarget(
            name: "floor-nio",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        // swift-nio-ssl: the same client over TLS.
        .executableTarget(
            name: "floor-tls",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]),
        // swift-protobuf: the Cast channel's CastMessage (the main package's generated file), encoded and decoded.
        .executableTarget(
            name: "floor-protobuf", dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")],
            sources: ["main.swift", "cast_channel.pb.swift"]),
        // All of the above, with swift-log and swift-service-lifecycle, as the daemon and CLI use them.
        .executableTarget(
            name: "floor-all",
            dependencies: [
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]),
    ])
