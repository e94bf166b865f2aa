// Every library of the brief at once, each used for real: the floor of a binary that holds them all.
import ArgumentParser
internal import FoundationEssentials
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import ServiceLifecycle
internal import SwiftProtobuf

struct Payload: Codable { var type: String; var requestId: Int }

final class Printer: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPClientResponsePart
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}

struct Idle: Service { func run() async throws { try await gracefulShutdown() } }

@main
struct Floor: AsyncParsableCommand {
    @Option var host: String = "127.0.0.1"
    @Option var port: Int = 8009
    @Flag var serve = false

    func run() async throws {
        let logger = Logger(label: "floor")
        var message = Mediaroute_Cast_CastMessage()
        message.namespace = "urn:x-cast:com.google.cast.tp.heartbeat"
        message.payloadUtf8 = String(decoding: try JSONEncoder().encode(Payload(type: "PING", requestId: 1)), as: UTF8.self)
        let bytes: [UInt8] = try message.serializedBytes()
        let back = try Mediaroute_Cast_CastMessage(serializedBytes: bytes)
        let payload = try JSONDecoder().decode(Payload.self, from: Data(back.payloadUtf8.utf8))
        logger.info("message", metadata: ["type": "\(payload.type)"])
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .none
        let context = try NIOSSLContext(configuration: configuration)
        let group = MultiThreadedEventLoopGroup.singleton
        let channel = try await ClientBootstrap(group: group).channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: nil))
                try channel.pipeline.syncOperations.addHTTPClientHandlers()
                try channel.pipeline.syncOperations.addHandler(Printer())
            }
        }.connect(host: host, port: port).get()
        try await channel.writeAndFlush(ByteBuffer(bytes: bytes))
        if serve {
            let services = ServiceGroup(services: [Idle()], gracefulShutdownSignals: [.sigterm], logger: logger)
            try await services.run()
        }
        try await channel.close()
    }
}
