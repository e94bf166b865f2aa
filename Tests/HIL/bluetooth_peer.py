#!/usr/bin/env python3
"""The rig's Bluetooth world, on the host, written with Google's bumble (PyPI), not by us.

Two virtual controllers share one bumble LocalLink (the air). The first is the guest box's
controller: its HCI is a TCP server that QEMU connects the guest's second serial port to
(the guest attaches it with `btattach -P h4`, so the real kernel and a real bluetoothd drive
it). The second carries a bumble device, "HIL Speaker": it advertises the Volume Control
Service, serves bumble's VCS (encryption required), pairs with LE Secure Connections showing
a fixed passkey on its "display" (the rig gives it to `mediaroutectl --pin`), and a few
seconds after the box first sets its volume it changes the volume itself, as a person at
the speaker would. Everything it sees is printed, one line each, for the rig to check.

With --sink-hci it also runs "HIL Sink", a classic (BR/EDR) A2DP sink: bumble's AVDTP on a
controller of BlueZ's own emulator (`btvirt -s` in the guest; its HCI reaches this process
over a virtio console and a byte pump). Each AVDTP connection offers the codecs of the next
--sink-rounds entry (AAC and SBC, then Opus — which MediaRoute does not build — and SBC); the
media packets it receives go to --sink-output-ROUND-CODEC.rtp for the rig to decode (FFmpeg
for AAC, `sbcdec` for SBC) and compare with the tone it streamed. An entry ending in `:self`
is a speaker that sets its stream up itself: a second into the stream it closes it and, half
a second later, configures the box's endpoint and opens the stream again on its own (AVDTP
from the speaker's side, as speakers that reconnect or change their mind do).
"""

import argparse
import asyncio
import signal
import struct
import sys
import time

START = time.monotonic()

from bumble import hci
from bumble.controller import Controller
from bumble.a2dp import (
    A2DP_MPEG_2_4_AAC_CODEC_TYPE, A2DP_NON_A2DP_CODEC_TYPE, A2DP_SBC_CODEC_TYPE, AacMediaCodecInformation,
    OpusMediaCodecInformation, SbcMediaCodecInformation, make_audio_sink_service_sdp_records,
)
from bumble.avdtp import AVDTP_AUDIO_MEDIA_TYPE, Listener, MediaCodecCapabilities
from bumble.core import AdvertisingData, PhysicalTransport
from bumble.device import Device, DeviceConfiguration
from bumble.host import Host
from bumble.link import LocalLink
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.profiles.vcs import VolumeControlService
from bumble.transport import open_transport
from bumble.transport.common import AsyncPipeSink


class ConnectionAddressLink(LocalLink):
    """bumble 0.0.236's LocalLink sends LE ACL data from the sender controller's random address.
    BlueZ sets a non-resolvable random address for active scanning, then connects from its
    public address, so the speaker drops everything the box sends ("no connection for …").
    Data here goes from the address the connection was made with."""

    def send_acl_data(self, sender_controller, destination_address, transport, data):
        connection = sender_controller.le_connections.get(destination_address) if transport == PhysicalTransport.LE else None
        if connection is None:
            return super().send_acl_data(sender_controller, destination_address, transport, data)
        destination = self.find_le_controller(destination_address)
        if destination is not None:
            source = connection.self_address
            asyncio.get_running_loop().call_soon(lambda: destination.on_link_acl_data(source, transport, data))


def say(line: str) -> None:
    print(f"peer: {line} (at {time.monotonic() - START:.1f} s)", flush=True)


class DisplayOnly(PairingDelegate):
    """A speaker with a small display and no keys: it shows the passkey, the box enters it."""

    def __init__(self, passkey: int) -> None:
        super().__init__(io_capability=PairingDelegate.IoCapability.DISPLAY_OUTPUT_ONLY)
        self.passkey = passkey

    async def generate_passkey(self) -> int:
        return self.passkey

    async def display_number(self, number: int, digits: int) -> None:
        say(f"display shows passkey {number:0{digits}d}")


def sink_capabilities(codec: str) -> MediaCodecCapabilities:
    """One stream endpoint's capabilities: SBC (everything, bitpool 2–53), AAC (MPEG-2/4 AAC-LC,
    44.1/48 kHz, stereo, 256 kbit/s VBR, as iPhone-oriented speakers offer) or Opus (Google's
    vendor codec, which MediaRoute does not build)."""
    if codec == "aac":
        return MediaCodecCapabilities(
            media_type=AVDTP_AUDIO_MEDIA_TYPE,
            media_codec_type=A2DP_MPEG_2_4_AAC_CODEC_TYPE,
            media_codec_information=AacMediaCodecInformation(
                object_type=AacMediaCodecInformation.ObjectType.MPEG_2_AAC_LC | AacMediaCodecInformation.ObjectType.MPEG_4_AAC_LC,
                sampling_frequency=AacMediaCodecInformation.SamplingFrequency.SF_44100 | AacMediaCodecInformation.SamplingFrequency.SF_48000,
                channels=AacMediaCodecInformation.Channels.STEREO,
                vbr=1,
                bitrate=256000,
            ),
        )
    if codec == "opus":
        return MediaCodecCapabilities(
            media_type=AVDTP_AUDIO_MEDIA_TYPE,
            media_codec_type=A2DP_NON_A2DP_CODEC_TYPE,
            media_codec_information=OpusMediaCodecInformation(
                channel_mode=OpusMediaCodecInformation.ChannelMode.STEREO,
                frame_size=OpusMediaCodecInformation.FrameSize.FS_20MS,
                sampling_frequency=OpusMediaCodecInformation.SamplingFrequency.SF_48000,
            ),
        )
    return MediaCodecCapabilities(
        media_type=AVDTP_AUDIO_MEDIA_TYPE,
        media_codec_type=A2DP_SBC_CODEC_TYPE,
        media_codec_information=SbcMediaCodecInformation(
            sampling_frequency=SbcMediaCodecInformation.SamplingFrequency.SF_44100
            | SbcMediaCodecInformation.SamplingFrequency.SF_48000,
            channel_mode=SbcMediaCodecInformation.ChannelMode.MONO
            | SbcMediaCodecInformation.ChannelMode.DUAL_CHANNEL
            | SbcMediaCodecInformation.ChannelMode.STEREO
            | SbcMediaCodecInformation.ChannelMode.JOINT_STEREO,
            block_length=SbcMediaCodecInformation.BlockLength.BL_4 | SbcMediaCodecInformation.BlockLength.BL_8
            | SbcMediaCodecInformation.BlockLength.BL_12 | SbcMediaCodecInformation.BlockLength.BL_16,
            subbands=SbcMediaCodecInformation.Subbands.S_4 | SbcMediaCodecInformation.Subbands.S_8,
            allocation_method=SbcMediaCodecInformation.AllocationMethod.LOUDNESS
            | SbcMediaCodecInformation.AllocationMethod.SNR,
            minimum_bitpool_value=2,
            maximum_bitpool_value=53,
        ),
    )


async def run_sink(spec: str, output_path: str, rounds: list[str]) -> None:
    """A classic A2DP sink that keeps what it is sent. Each AVDTP connection is a round with the
    stream endpoints its entry of `rounds` names (e.g. AAC and SBC, then Opus and SBC); the media
    packets of round N go to OUTPUT-N-CODEC.rtp as records of a 2-byte big-endian length, the
    RTP marker bit (one byte), the RTP sequence number (2 bytes), the arrival time (a double,
    seconds), then the RTP payload."""
    say(f"sink waiting for its controller on {spec}")
    transport = await open_transport(spec)
    # The guest's pump joins this port to btvirt late in its boot; until the rig says it did
    # (SIGUSR1), a command would go nowhere and time out.
    bridged = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, bridged.set)
    await bridged.wait()
    say("sink: the guest bridged its controller")
    config = DeviceConfiguration(name="HIL Sink", class_of_device=0x240414, classic_enabled=True, le_enabled=False)
    sink_device = Device.from_config_with_hci(config, transport.source, transport.sink)
    sink_device.sdp_service_records = {0x00010001: make_audio_sink_service_sdp_records(0x00010001)}
    sink_device.pairing_config_factory = lambda connection: PairingConfig(
        mitm=False, delegate=PairingDelegate(io_capability=PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT))
    round_number = 0

    def on_avdtp_connection(protocol) -> None:
        nonlocal round_number
        round_number += 1
        number = round_number
        codecs, _, behaviour = rounds[min(number, len(rounds)) - 1].partition(":")
        codecs = codecs.split("+")
        say(f"sink: AVDTP signalling connected (round {number}: offering {', '.join(codecs)}"
            f"{'; it sets its stream up again itself' if behaviour == 'self' else ''})")
        for codec in codecs:
            sink = protocol.add_sink(sink_capabilities(codec))
            packets = 0
            output = None

            def on_rtp_packet(packet, codec=codec, sink=sink) -> None:
                nonlocal packets, output
                if output is None:
                    output = open(f"{output_path}-{number}-{codec}.rtp", "wb")
                packets += 1
                output.write(struct.pack(">HBHd", len(packet.payload), packet.marker, packet.sequence_number, time.monotonic()) + packet.payload)
                output.flush()
                if packets in (1, 10, 100) or packets % 1000 == 0:
                    say(f"sink received {packets} A2DP packets ({codec}, round {number})")
                if behaviour == "self" and packets == 25:
                    tasks.add(asyncio.get_running_loop().create_task(set_up_again(sink, codec, number)))

            sink.on("configuration", lambda sink=sink, codec=codec: say(f"sink round {number} configured {codec}: {sink.configuration}"))
            sink.on("start", lambda codec=codec: say(f"sink: stream started ({codec}, round {number})"))
            sink.on("suspend", lambda: say("sink: stream suspended"))
            sink.on("rtp_packet", on_rtp_packet)

    tasks = set()  # the loop holds its tasks only weakly

    async def set_up_again(sink, codec: str, number: int) -> None:
        """Closes the stream the box set up and sets it up again from this side: SET
        CONFIGURATION on the box's endpoint with the same configuration, OPEN, the media
        channel. bluetoothd hands the box a new MediaTransport1 the box never asked for."""
        try:
            stream = sink.stream
            say(f"sink: closing the stream (round {number}) to set it up again itself")
            await stream.close()
            await asyncio.sleep(0.5)
            await stream.configure()
            await stream.open()
            sink.on_rtp_channel_open()  # bumble routes the media channel it opened itself only so
            say(f"sink: set the stream up again itself ({codec}, round {number})")
        except Exception as error:
            say(f"sink: setting the stream up again failed: {error!r}")

    def on_connection(connection) -> None:
        say(f"sink connected to {connection.peer_address}")
        connection.on(connection.EVENT_PAIRING, lambda keys: say("sink paired (BR/EDR Secure Simple Pairing)"))
        connection.on(connection.EVENT_DISCONNECTION, lambda reason: say(f"sink disconnected ({reason})"))

    sink_device.on(sink_device.EVENT_CONNECTION, on_connection)
    await sink_device.power_on()
    # What a real A2DP speaker puts in its extended inquiry response: its name and Audio Sink.
    sink_device.inquiry_response = bytes(AdvertisingData([
        (AdvertisingData.COMPLETE_LOCAL_NAME, b"HIL Sink"),
        (AdvertisingData.COMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS, bytes([0x0B, 0x11])),
    ]))
    listener = Listener.for_device(sink_device)
    listener.on("connection", on_avdtp_connection)
    await sink_device.set_discoverable(True)
    await sink_device.set_connectable(True)
    say(f"HIL Sink is discoverable as {sink_device.public_address}")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hci", required=True, help="bumble transport of the box's controller, e.g. tcp-server:127.0.0.1:7711")
    parser.add_argument("--passkey", type=int, default=314159)
    parser.add_argument("--own-volume", type=int, default=200, help="the volume the speaker sets itself (0-255)")
    parser.add_argument("--own-change-after", type=float, default=4.0)
    parser.add_argument("--sink-hci", help="bumble transport of the A2DP sink's controller (one of btvirt's in the guest)")
    parser.add_argument("--sink-output", default="sink")
    parser.add_argument("--sink-rounds", default="aac+sbc,opus+sbc", help="codecs offered on each AVDTP connection (`:self`: the sink sets the stream up again itself)")
    arguments = parser.parse_args()
    if arguments.sink_hci:
        async def sink_or_say_why() -> None:
            try:
                rounds = arguments.sink_rounds.split(",")
                await run_sink(arguments.sink_hci, arguments.sink_output, rounds)
            except Exception as error:  # a task's failure would otherwise go unseen until exit
                say(f"sink failed: {error!r}")
        # Kept: the loop holds its tasks only weakly.
        sink_task = asyncio.get_running_loop().create_task(sink_or_say_why())

    link = ConnectionAddressLink()
    say(f"waiting for the box on {arguments.hci}")
    transport = await open_transport(arguments.hci)
    Controller("box", host_source=transport.source, host_sink=transport.sink, link=link,
               public_address=hci.Address("02:00:00:00:00:B0", hci.Address.PUBLIC_DEVICE_ADDRESS))
    say("box controller attached")

    speaker_address = hci.Address("02:00:00:00:00:5A", hci.Address.PUBLIC_DEVICE_ADDRESS)
    speaker_controller = Controller("speaker", link=link, public_address=speaker_address)
    speaker = Device(name="HIL Speaker", address=speaker_address, host=Host(speaker_controller, AsyncPipeSink(speaker_controller)))
    volume = VolumeControlService(volume_setting=64)
    speaker.add_service(volume)
    speaker.pairing_config_factory = lambda connection: PairingConfig(
        sc=True, mitm=True, bonding=True, delegate=DisplayOnly(arguments.passkey))

    own_change_done = False

    async def change_own_volume() -> None:
        await asyncio.sleep(arguments.own_change_after)
        volume.volume_setting = arguments.own_volume
        volume.change_counter = (volume.change_counter + 1) % 256
        await speaker.notify_subscribers(attribute=volume.volume_state)
        say(f"changed its own volume to {arguments.own_volume} (counter {volume.change_counter})")

    def on_volume_state_change() -> None:
        nonlocal own_change_done
        say(f"VCS write: volume {volume.volume_setting} muted {volume.muted} counter {volume.change_counter}")
        if not own_change_done:
            own_change_done = True
            asyncio.get_running_loop().create_task(change_own_volume())

    volume.on(volume.EVENT_VOLUME_STATE_CHANGE, on_volume_state_change)

    def on_connection(connection) -> None:
        say(f"connected to {connection.peer_address}")
        connection.on(connection.EVENT_PAIRING, lambda keys: say("paired (LE Secure Connections, passkey)"))
        connection.on(connection.EVENT_PAIRING_FAILURE, lambda reason: say(f"pairing failed: {reason}"))
        connection.on(connection.EVENT_DISCONNECTION, lambda reason: say(f"disconnected ({reason})"))

    speaker.on(speaker.EVENT_CONNECTION, on_connection)
    await speaker.power_on()
    advertising = bytes(AdvertisingData([
        (AdvertisingData.FLAGS, bytes([0x06])),
        (AdvertisingData.COMPLETE_LOCAL_NAME, b"HIL Speaker"),
        (AdvertisingData.INCOMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS, bytes([0x44, 0x18])),
        (AdvertisingData.APPEARANCE, bytes([0x41, 0x08])),
    ]))
    await speaker.start_advertising(own_address_type=hci.OwnAddressType.PUBLIC, auto_restart=True, advertising_data=advertising)
    say("HIL Speaker advertises the Volume Control Service")
    await asyncio.get_running_loop().create_future()


if __name__ == "__main__":
    import logging
    import os
    logging.basicConfig(level=os.environ.get("BUMBLE_LOGLEVEL", "WARNING").upper(), format="bumble %(relativeCreated)d %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
