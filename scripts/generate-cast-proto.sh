#!/bin/sh
# Regenerates Sources/CastChannel/cast_channel.pb.swift from its .proto.
# Needs protoc (Debian: protobuf-compiler) and protoc-gen-swift built from the
# swift-protobuf version Package.swift names:
#   git clone --branch 1.39.0 https://github.com/apple/swift-protobuf /tmp/protogen
#   (cd /tmp/protogen && swift build -c release --product protoc-gen-swift)
#   PROTOC_GEN_SWIFT=/tmp/protogen/.build/release/protoc-gen-swift scripts/generate-cast-proto.sh
# The generated file is checked in: building the plugin takes ~10 minutes.
set -eu
cd "$(dirname "$0")/.."
plugin=${PROTOC_GEN_SWIFT:-/tmp/protogen/.build/release/protoc-gen-swift}
protoc --plugin=protoc-gen-swift="$plugin" \
  --swift_opt=Visibility=Internal \
  --swift_opt=UseAccessLevelOnImports=true \
  --proto_path=Sources/CastChannel/Proto \
  --swift_out=Sources/CastChannel \
  Sources/CastChannel/Proto/cast_channel.proto
