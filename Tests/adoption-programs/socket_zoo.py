#!/usr/bin/env python3
"""A program that knows nothing of voipd and opens sockets of every kind voipd may adopt,
in its main thread, in another thread and in a child process, for the discovery tests.

    socket_zoo.py TCP_PEER_PORT UDP_PEER_PORT [EXTRA_UDP_SOCKETS]

TCP_PEER_PORT: a TCP listener of the test on 127.0.0.1, to connect to. UDP_PEER_PORT: a UDP
socket of the test on 127.0.0.1, to connect a UDP socket to. EXTRA_UDP_SOCKETS: that many
more UDP sockets bound to 127.0.0.1 (a program with very many sockets).

It prints one JSON object on a line: {"sockets": [{"name", "pid", "fd", "inode"}, ...]}, the
child's included, then waits until its standard input closes, reading nothing from its
sockets (what arrives stays queued), and exits. The child exits with it.
"""
import json
import os
import resource
import socket
import sys
import threading


def describe(name, sock, pid=None):
    return {"name": name, "pid": pid or os.getpid(), "fd": sock.fileno(), "inode": os.fstat(sock.fileno()).st_ino}


def main():
    tcp_peer, udp_peer = int(sys.argv[1]), int(sys.argv[2])
    extra = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    found = []
    keep = []

    def open_socket(family, kind):
        sock = socket.socket(family, kind)
        keep.append(sock)
        return sock

    # The ports of its UDP sockets and TCP listeners. UDP and TCP number their ports apart, so
    # the kernel may give both the same port, or a listener the port after a UDP socket's:
    # that is what the sip preset takes for a program's own SIP port (and its TLS port). The
    # zoo has no SIP sockets: each of these is bound to a port at least two away from the
    # others.
    ports = set()

    def open_bound(family, kind, host):
        while True:
            sock = socket.socket(family, kind)
            if family == socket.AF_INET6 and kind == socket.SOCK_DGRAM and host == "::":
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            sock.bind((host, 0))
            port = sock.getsockname()[1]
            if not ports & {port - 1, port, port + 1}:
                ports.add(port)
                keep.append(sock)
                return sock
            sock.close()

    listener = open_bound(socket.AF_INET, socket.SOCK_STREAM, "127.0.0.1")
    listener.listen(8)
    found.append(describe("tcp-listener", listener))

    listener6 = open_bound(socket.AF_INET6, socket.SOCK_STREAM, "::1")
    listener6.listen(8)
    found.append(describe("tcp6-listener", listener6))

    outgoing = open_socket(socket.AF_INET, socket.SOCK_STREAM)
    outgoing.connect(("127.0.0.1", tcp_peer))
    found.append(describe("tcp-to-peer", outgoing))

    bound = open_bound(socket.AF_INET, socket.SOCK_DGRAM, "127.0.0.1")
    found.append(describe("udp-bound", bound))

    connected = open_bound(socket.AF_INET, socket.SOCK_DGRAM, "127.0.0.1")
    connected.connect(("127.0.0.1", udp_peer))
    found.append(describe("udp-connected", connected))

    dual = open_bound(socket.AF_INET6, socket.SOCK_DGRAM, "::")
    found.append(describe("udp6-dual-stack", dual))

    # Not TCP or UDP: counted apart.
    keep.extend(socket.socketpair())

    # A thread connects to the program's own listener; the main thread accepts.
    def connect_from_thread():
        sock = open_socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.connect(listener.getsockname())
        found.append(describe("tcp-from-thread", sock))

    thread = threading.Thread(target=connect_from_thread)
    thread.start()
    accepted, _ = listener.accept()
    keep.append(accepted)
    thread.join()
    found.append(describe("tcp-accepted", accepted))

    # A child forked from another thread: its own sockets, and the listener inherited.
    report_read, report_write = os.pipe()
    def fork_child():
        pid = os.fork()
        if pid == 0:
            os.close(report_read)
            child = open_bound(socket.AF_INET, socket.SOCK_DGRAM, "127.0.0.1")
            child_listener = open_bound(socket.AF_INET, socket.SOCK_STREAM, "127.0.0.1")
            child_listener.listen(1)
            report = [describe("child-udp", child), describe("child-tcp-listener", child_listener)]
            os.write(report_write, (json.dumps(report) + "\n").encode())
            os.close(report_write)
            # Ends when the parent does: the parent holds the pipe's other end open.
            os.read(0, 1)
            os._exit(0)
        children.append(pid)

    children = []
    forker = threading.Thread(target=fork_child)
    forker.start()
    forker.join()
    os.close(report_write)
    with os.fdopen(report_read) as reader:
        found.extend(json.loads(reader.readline()))

    if extra:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and soft < extra + 100:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    for _ in range(extra):
        sock = open_socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("127.0.0.1", 0))

    print(json.dumps({"sockets": found}), flush=True)
    sys.stdin.read()
    for pid in children:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


main()
