"""async_upnp_client, the comparison peer of `mediaroute-bench upnp`.

Usage: upnp_peer.py SOURCE_IP RUNS MEDIA_URL
Prints one JSON object: milliseconds per run for the first search reply, the
device built (description + SCPDs), and SetAVTransportURI + Play until
GetTransportInfo says PLAYING (in this warm process), plus peak RSS in KiB.
"""
import asyncio
import json
import resource
import sys
import time

from async_upnp_client.aiohttp import AiohttpRequester
from async_upnp_client.client_factory import UpnpFactory
from async_upnp_client.search import async_search

RENDERER = "urn:schemas-upnp-org:device:MediaRenderer:1"


async def main(source_ip: str, runs: int, media_url: str) -> None:
    factory = UpnpFactory(AiohttpRequester())
    results = {"first_reply": [], "device_built": [], "play": []}
    device = None
    for _ in range(runs):
        loop = asyncio.get_running_loop()
        first = loop.create_future()

        async def on_response(headers):
            if not first.done():
                first.set_result((time.perf_counter(), headers))

        start = time.perf_counter()
        search = asyncio.create_task(
            async_search(on_response, timeout=1, search_target=RENDERER, source=(source_ip, 0)))
        replied, headers = await first
        device = await factory.async_create_device(headers["location"])
        built = time.perf_counter()
        results["first_reply"].append((replied - start) * 1000)
        results["device_built"].append((built - start) * 1000)
        await search
    transport = device.service("urn:schemas-upnp-org:service:AVTransport:1")
    for _ in range(runs):
        start = time.perf_counter()
        await transport.action("SetAVTransportURI").async_call(InstanceID=0, CurrentURI=media_url, CurrentURIMetaData="")
        await transport.action("Play").async_call(InstanceID=0, Speed="1")
        while (await transport.action("GetTransportInfo").async_call(InstanceID=0))["CurrentTransportState"] != "PLAYING":
            pass
        results["play"].append((time.perf_counter() - start) * 1000)
        # gmediarender 0.1 can crash when Stop follows Play within ~0.5 s.
        await asyncio.sleep(1.0)
        await transport.action("Stop").async_call(InstanceID=0)
        await asyncio.sleep(0.5)
    results["peak_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(results), flush=True)


asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
