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
"""

import argparse
import asyncio
import sys

from bumble import hci
from bumble.controller import Controller
from bumble.core import AdvertisingData, PhysicalTransport
from bumble.device import Device
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
    print(f"peer: {line}", flush=True)


class DisplayOnly(PairingDelegate):
    """A speaker with a small display and no keys: it shows the passkey, the box enters it."""

    def __init__(self, passkey: int) -> None:
        super().__init__(io_capability=PairingDelegate.IoCapability.DISPLAY_OUTPUT_ONLY)
        self.passkey = passkey

    async def generate_passkey(self) -> int:
        return self.passkey

    async def display_number(self, number: int, digits: int) -> None:
        say(f"display shows passkey {number:0{digits}d}")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hci", required=True, help="bumble transport of the box's controller, e.g. tcp-server:127.0.0.1:7711")
    parser.add_argument("--passkey", type=int, default=314159)
    parser.add_argument("--own-volume", type=int, default=200, help="the volume the speaker sets itself (0-255)")
    parser.add_argument("--own-change-after", type=float, default=4.0)
    arguments = parser.parse_args()

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
    logging.basicConfig(level=os.environ.get("BUMBLE_LOGLEVEL", "WARNING").upper(), format="bumble %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
