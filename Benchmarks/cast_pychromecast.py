#!/usr/bin/python3
"""pychromecast (Debian's python3-pychromecast) doing what `mediaroute-bench cast` measures
MediaRoute doing, against the same test receiver:
  play NAME URL   discovery start -> the receiver reports PLAYING for URL; prints "playing MS"
  resume NAME URL HOST PORT
                  plays, then asks the receiver (control port) to reset the connection and
                  prints "resumed MS": the reset -> the socket client connected again with the
                  media status read back.
"""
import socket
import sys
import threading
import time

import pychromecast
from pychromecast.socket_client import CONNECTION_STATUS_CONNECTED


def discover(name):
    casts, browser = pychromecast.get_listed_chromecasts(friendly_names=[name], discovery_timeout=30)
    if not casts:
        sys.exit("no %s found" % name)
    return casts[0], browser


def play(cast, url):
    playing = threading.Event()

    class Listener:
        def new_media_status(self, status):
            if status.player_state == "PLAYING":
                playing.set()

    cast.wait(timeout=30)
    controller = cast.media_controller
    controller.register_status_listener(Listener())
    controller.play_media(url, "video/mp4")
    if not playing.wait(30):
        sys.exit("not playing")


def command(host, port, line):
    with socket.create_connection((host, port), timeout=5) as control:
        control.sendall((line + "\n").encode())
        control.recv(4096)


def main():
    mode, name, url = sys.argv[1:4]
    start = time.monotonic()
    cast, browser = discover(name)
    play(cast, url)
    if mode == "play":
        print("playing %.1f" % ((time.monotonic() - start) * 1000), flush=True)
    else:
        host, port = sys.argv[4], int(sys.argv[5])
        connected = threading.Event()
        media = threading.Event()

        class Connection:
            def new_connection_status(self, status):
                if status.status == CONNECTION_STATUS_CONNECTED:
                    connected.set()

        class Media:
            def new_media_status(self, status):
                if connected.is_set():
                    media.set()

        cast.register_connection_listener(Connection())
        cast.media_controller.register_status_listener(Media())
        time.sleep(0.5)
        reset = time.monotonic()
        command(host, port, "reset")
        if not connected.wait(120) or not media.wait(30):
            sys.exit("not resumed")
        print("resumed %.1f" % ((time.monotonic() - reset) * 1000), flush=True)
    cast.disconnect(timeout=5)
    browser.stop_discovery()


if __name__ == "__main__":
    main()
