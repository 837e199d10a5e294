# The outside host and the client's probes for the egress tests (run with `python3 -c`).
#   serve PORT...             echo on TCP and UDP at each port, IPv4 and IPv6; prints "ready"
#   tcp|udp SOURCE DEST PORT  exit 0 when the echo comes back within a second
import socket
import sys
import threading


def serve(ports):
    sockets = []
    for family, any_address in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            for port in ports:
                s = socket.socket(family, kind)
                if family == socket.AF_INET6:
                    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((any_address, port))
                if kind == socket.SOCK_STREAM:
                    s.listen(16)
                sockets.append(s)
    for s in sockets:
        target = tcp_echo if s.type == socket.SOCK_STREAM else udp_echo
        threading.Thread(target=target, args=(s,), daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()


def tcp_echo(listener):
    while True:
        connection, _ = listener.accept()
        with connection:
            connection.sendall(connection.recv(64))


def udp_echo(s):
    while True:
        data, peer = s.recvfrom(64)
        s.sendto(data, peer)


def probe(kind, source, dest, port):
    family = socket.AF_INET6 if ":" in dest else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
    s.settimeout(1)
    s.bind((source, 0))
    try:
        if kind == "tcp":
            s.connect((dest, port))
            s.sendall(b"ferrozone")
        else:
            s.sendto(b"ferrozone", (dest, port))
        return s.recv(64) == b"ferrozone"
    except OSError:
        return False


if sys.argv[1] == "serve":
    serve([int(port) for port in sys.argv[2:]])
else:
    sys.exit(0 if probe(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])) else 1)
