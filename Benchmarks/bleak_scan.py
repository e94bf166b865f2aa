"""bleak scanning MediaRoute's BlueZ mock, for `mediaroute-bench bluez`.

Usage: bleak_scan.py EXPECTED TIMEOUT
Prints "ready" once scanning, then one line: "<devices seen> <cpu seconds> <wall seconds>"
counted from "ready" until EXPECTED devices were reported or TIMEOUT passed.
Runs against $DBUS_SYSTEM_BUS_ADDRESS.
"""
import asyncio
import sys
import time

from bleak import BleakScanner


async def main(expected, timeout):
    seen = set()
    done = asyncio.Event()

    def detected(device, _advertisement):
        seen.add(device.address)
        if len(seen) >= expected:
            done.set()

    scanner = BleakScanner(detection_callback=detected)
    await scanner.start()
    cpu = time.process_time()
    wall = time.monotonic()
    print("ready", flush=True)
    try:
        await asyncio.wait_for(done.wait(), timeout)
    except asyncio.TimeoutError:
        pass
    print("%d %.6f %.6f" % (len(seen), time.process_time() - cpu, time.monotonic() - wall), flush=True)
    await scanner.stop()


asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))
