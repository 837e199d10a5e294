"""The "outside" host of scripts/wg-e2e: answers each TCP connection and each UDP datagram
with the address it came from, so a client learns whether it reached the host and which
source address the host saw (the gateway's, when the gateway masquerades).

    python3 outside.py PORT...

Listens on every given port, TCP and UDP, on all addresses, until killed.
"""

import socket
import sys
import threading


def serve_tcp(port):
    listener = socket.create_server(("0.0.0.0", port), reuse_port=True)
    while True:
        connection, (address, _) = listener.accept()
        with connection:
            connection.sendall(address.encode() + b"\n")


def serve_udp(port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", port))
    while True:
        _, (address, source_port) = sock.recvfrom(2048)
        sock.sendto(address.encode() + b"\n", (address, source_port))


def main():
    ports = [int(port) for port in sys.argv[1:]]
    threads = [threading.Thread(target=serve, args=(port,), daemon=True)
               for port in ports for serve in (serve_tcp, serve_udp)]
    for thread in threads:
        thread.start()
    print("listening", flush=True)
    for thread in threads:
        thread.join()


main()
